#!/usr/bin/env python3
"""Non-conversational retrieval tasks in the BEIR layout the quality harness reads
(`--tasks beir:DIR`), assembled from Debian packages (public, reachable here, pinned by version
and checked by SHA-256), so a run anywhere rebuilds the same files:

  manpages  Linux man-pages 6.03 (Debian `manpages` + `manpages-dev` 6.03-2). A query is a page's
            one-line NAME description ("create a child process"); the relevant document is that
            page (pages sharing a description are all relevant), rendered by groff with its NAME
            section removed, titled by the names it documents. Subtask = the manual section
            (syscalls 2, libc 3, files 4+5, overview 6+7, commands 1+8). Known-item search on
            technical prose.
  pyfaq     Python 3.11's FAQ (Debian `python3.11-doc` 3.11.2-6+deb12u9, the reST sources). A
            query is an FAQ question, the relevant document its answer; subtask = the FAQ page
            (platform = windows + gui + installed, each under 10 questions). Question answering.

Layout per task: corpus.jsonl ({_id, title, text}), queries.jsonl ({_id, text,
metadata.subtask}), qrels/test.tsv (query-id, corpus-id, score), manifest.json (sources, their
SHA-256, counts, every cut). A document is cut at MAX_CHARS on a paragraph boundary (the store
refuses rows over 16,000 characters; the embedders read far less); the manifest counts cuts.

Run: python3 scale/tasks/assemble.py [--out target/tasks] [--debs DIR]
  (`apt-get download` fetches the three packages into --debs unless they are there already;
  needs dpkg-deb and groff, both in Debian's base system.)
"""
import argparse
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

PACKAGES = {
    "manpages": ("6.03-2", "manpages_6.03-2_all.deb"),
    "manpages-dev": ("6.03-2", "manpages-dev_6.03-2_all.deb"),
    "python3.11-doc": ("3.11.2-6+deb12u9", "python3.11-doc_3.11.2-6+deb12u9_all.deb"),
}
MAX_CHARS = 8000
SECTIONS = {"1": "commands", "8": "commands", "2": "syscalls", "3": "libc",
            "4": "files", "5": "files", "6": "overview", "7": "overview"}
FAQ_SUBTASKS = {"windows": "platform", "gui": "platform", "installed": "platform"}


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(debs):
    os.makedirs(debs, exist_ok=True)
    for name, (version, filename) in PACKAGES.items():
        if not os.path.exists(os.path.join(debs, filename)):
            subprocess.run(["apt-get", "download", "%s=%s" % (name, version)], cwd=debs,
                           check=True)
    return {filename: sha256(os.path.join(debs, filename)) for _, filename in PACKAGES.values()}


def extract(debs, root):
    for _, filename in PACKAGES.values():
        subprocess.run(["dpkg-deb", "-x", os.path.join(debs, filename), root], check=True)


def cut(text, limit=MAX_CHARS):
    """`text` up to `limit` characters, ending at a paragraph (else line, else word) break."""
    if len(text) <= limit:
        return text, False
    head = text[:limit]
    for sep in ("\n", " "):
        at = head.rfind(sep)
        if at > limit // 2:
            return head[:at].rstrip(), True
    return head, True


def collapse(lines):
    """Rendered man text to paragraphs: blank lines separate, inner whitespace is one space."""
    paras, cur = [], []
    for line in lines:
        if line.strip():
            cur.append(line.strip())
        elif cur:
            paras.append(" ".join(cur))
            cur = []
    if cur:
        paras.append(" ".join(cur))
    return "\n".join(re.sub(r"\s+", " ", p) for p in paras)


def name_line(source):
    """The NAME section of a man page's troff source, as one line."""
    m = re.search(r"^\.SH\s+\"?NAME\"?\s*\n(.*?)(?=^\.SH)", source, re.M | re.S)
    if not m:
        return None
    body = " ".join(l for l in m.group(1).splitlines() if not l.startswith(".\\\""))
    body = re.sub(r"^\.\w+\s*", "", body, flags=re.M)
    return re.sub(r"\s+", " ", body).strip()


def render(path):
    env = dict(os.environ, LC_ALL="C.UTF-8")
    with gzip.open(path, "rb") as f:
        source = f.read()
    out = subprocess.run(["groff", "-t", "-man", "-Tutf8", "-rLL=2000n", "-rHY=0", "-P-cbou"],
                         input=source, capture_output=True, env=env, check=True).stdout
    return source.decode("utf-8", "replace"), out.decode("utf-8", "replace")


def body_without_name(rendered):
    """The rendered page minus its header and footer lines and its NAME section."""
    lines = rendered.splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    lines = lines[1:]  # header: "fork(2)   System Calls Manual   fork(2)"
    while lines and not lines[-1].strip():
        lines.pop()
    lines = lines[:-1]  # footer: "Linux man-pages 6.03   2023-02-05   fork(2)"
    out, skipping = [], False
    for line in lines:
        if line and not line[0].isspace():  # a section heading
            skipping = line.strip() == "NAME"
        if not skipping:
            out.append(line)
    return collapse(out)


def manpages(root, out_dir):
    man = os.path.join(root, "usr/share/man")
    pages = []
    for section in sorted(os.listdir(man)):
        folder = os.path.join(man, section)
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if os.path.islink(path) or not name.endswith(".gz"):
                continue  # an alias of another page
            pages.append((section[3:], name[: -len(".gz")], path))
    docs, by_description, skipped, cuts = [], {}, [], 0
    for section, page, path in pages:
        source, rendered = render(path)
        if re.match(r"^\.so\s", source.lstrip()):
            skipped.append(page + " (.so include)")
            continue
        line = name_line(source)
        if not line or "\\-" not in line:
            skipped.append(page + " (no NAME description)")
            continue
        names, description = line.split("\\-", 1)
        description = re.sub(r"\\f[BIRP]|\\\(..|\\\[[^\]]*\]|\\&|\\", "", description).strip()
        names = re.sub(r"\\f[BIRP]|\\&|\\", "", names).strip().rstrip(",")
        text = body_without_name(rendered)
        if not description or not text:
            skipped.append(page + " (empty)")
            continue
        text, was_cut = cut(text)
        cuts += was_cut
        doc_id = page  # "fork.2"
        docs.append({"_id": doc_id, "title": names, "text": text})
        key = re.sub(r"\s+", " ", description.lower())
        entry = by_description.setdefault(key, {"text": description, "docs": [],
                                                "section": section})
        entry["docs"].append(doc_id)
    queries, qrels = [], []
    for i, (key, entry) in enumerate(sorted(by_description.items())):
        qid = "q%04d" % i
        subtask = SECTIONS.get(entry["section"], "other")
        queries.append({"_id": qid, "text": entry["text"], "metadata": {"subtask": subtask}})
        qrels.extend((qid, d) for d in entry["docs"])
    return write(out_dir, docs, queries, qrels, {
        "pages": len(pages), "skipped": skipped, "cut_at_chars": MAX_CHARS, "cut": cuts,
        "shared_descriptions": sum(1 for e in by_description.values() if len(e["docs"]) > 1)})


RST_ROLE = re.compile(r":[a-z:]+:`([^`<]*?)(?:\s*<[^>]*>)?`")
RST_LINK = re.compile(r"`([^`<]+?)\s*<[^>]+>`_+")


def rst_text(lines):
    out = []
    for line in lines:
        if re.match(r"^\.\. ", line) or re.match(r"^\s*:\w+:", line):
            continue  # directives, labels, field lists
        line = RST_ROLE.sub(r"\1", line)
        line = RST_LINK.sub(r"\1", line)
        line = re.sub(r"``([^`]+)``", r"\1", line)
        line = re.sub(r"`([^`]+)`_*", r"\1", line)
        line = line.replace("\\", "")
        out.append(line.rstrip())
    return collapse(out)


def pyfaq(root, out_dir):
    faq = os.path.join(root, "usr/share/doc/python3.11/html/_sources/faq")
    docs, queries, qrels, by_question = [], [], [], {}
    heading = re.compile(r"([-=])\1{2,}$")
    for filename in sorted(os.listdir(faq)):
        page = filename.split(".")[0]
        if page == "index":
            continue
        lines = open(os.path.join(faq, filename), encoding="utf-8").read().split("\n")
        marks = [i for i in range(1, len(lines))
                 if heading.match(lines[i]) and lines[i - 1].strip()
                 and not heading.match(lines[i - 1])]
        for n, i in enumerate(marks):
            if lines[i][0] != "-":
                continue  # a page or section title, not a question
            question = rst_text([lines[i - 1]]).strip()
            end = marks[n + 1] - 1 if n + 1 < len(marks) else len(lines)
            answer = rst_text(lines[i + 1:end])
            if not question or not answer:
                continue
            doc_id = "%s-%03d" % (page, len(docs))
            docs.append({"_id": doc_id, "title": "", "text": cut(answer)[0]})
            key = question.lower()
            entry = by_question.setdefault(key, {"text": question, "docs": [],
                                                 "subtask": FAQ_SUBTASKS.get(page, page)})
            entry["docs"].append(doc_id)
    for i, (_, entry) in enumerate(sorted(by_question.items())):
        qid = "q%04d" % i
        queries.append({"_id": qid, "text": entry["text"],
                        "metadata": {"subtask": entry["subtask"]}})
        qrels.extend((qid, d) for d in entry["docs"])
    return write(out_dir, docs, queries, qrels, {"cut_at_chars": MAX_CHARS})


def write(out_dir, docs, queries, qrels, extra):
    os.makedirs(os.path.join(out_dir, "qrels"), exist_ok=True)
    with open(os.path.join(out_dir, "corpus.jsonl"), "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
    with open(os.path.join(out_dir, "queries.jsonl"), "w", encoding="utf-8") as f:
        for q in queries:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    with open(os.path.join(out_dir, "qrels/test.tsv"), "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for qid, did in qrels:
            f.write("%s\t%s\t1\n" % (qid, did))
    subtasks = {}
    for q in queries:
        subtasks[q["metadata"]["subtask"]] = subtasks.get(q["metadata"]["subtask"], 0) + 1
    return dict(extra, docs=len(docs), queries=len(queries), qrels=len(qrels),
                subtasks=dict(sorted(subtasks.items())))


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(root, "target/tasks"))
    parser.add_argument("--debs", default=os.path.join(root, "target/tasks/debs"))
    args = parser.parse_args()
    sources = fetch(args.debs)
    with tempfile.TemporaryDirectory() as tree:
        extract(args.debs, tree)
        for task, build in (("manpages", manpages), ("pyfaq", pyfaq)):
            out_dir = os.path.join(args.out, task)
            stats = build(tree, out_dir)
            manifest = {"task": task, "sources_sha256": sources, "assembler":
                        "scale/tasks/assemble.py", **stats}
            with open(os.path.join(out_dir, "manifest.json"), "w") as f:
                json.dump(manifest, f, indent=1)
            print(task, json.dumps({k: v for k, v in stats.items() if k != "skipped"}),
                  file=sys.stderr)


if __name__ == "__main__":
    main()
