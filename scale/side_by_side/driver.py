#!/usr/bin/env python3
"""cpersona-rs and CPersona 2.6.14 side by side: one embedding, one corpus, one set of queries.

`cpersona embed-serve` serves one embedder (the builtin MiniLM when CPERSONA_MODEL_DIR is set,
else the hash embedder) on CPersona's HTTP embedding contract. The driver embeds a seeded
corpus through it once, writes one JSONL file (rows with `embedding_b64`), and for each rung
imports it into a fresh store of each server through MCP `import_memories` (stdio, the official
`mcp` client). Both servers embed queries through the same embed-serve
(CPERSONA_EMBEDDING_MODE=http), so a query costs each one HTTP round trip. After the import the
Rust store's index generation is built with `cpersona index rebuild` (the operator's step);
CPersona is used as shipped. Then each server answers the same queries (limit 10, gate and
autocut off so the top 10 is a ranking, not a cut), after a warm-up; we report recall
round-trip p50/p95 per server, the ratio CPersona / cpersona-rs, and the mean overlap of their
top-10 ids (|A ∩ B| / 10).

Usage: python driver.py --binary target/debug/cpersona --rungs 1000,10000 [--queries 200]
"""

import argparse
import asyncio
import base64
import json
import os
import random
import socket
import struct
import subprocess
import sys
import time
import urllib.request

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

AGENT = "sbs"
WARMUP = 20
SUBJECTS = ("Aiko", "Ben", "Carla", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas")
VERBS = ("booked", "cancelled", "moved", "discussed", "finished", "reviewed", "forgot",
         "planned", "paid", "fixed", "postponed", "shared")
OBJECTS = ("the dentist appointment", "the flight to Kyoto", "the Berlin offsite", "the invoice",
           "the piano lesson", "the garden fence", "the database migration", "the budget review",
           "the birthday dinner", "the server upgrade", "the violin recital", "the tax return",
           "the kernel patch", "the train to Vienna", "the coffee order", "the team retro",
           "the recall benchmark", "the vector index", "the landlord meeting", "the car service")
WHEN = ("on Monday", "next week", "yesterday", "in March", "after lunch", "before the deadline",
        "at the weekend", "last night", "tomorrow morning", "in two weeks")
WHY = ("because the price went up", "since Carla was ill", "to save money", "as the doctor asked",
       "because it rained", "so the team could rest", "after a long talk", "without telling anyone",
       "to meet the deadline", "for the third time")


def sentence(rng):
    return (f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} "
            f"{rng.choice(WHEN)} {rng.choice(WHY)}.")


def corpus(rows, seed):
    rng = random.Random(seed)
    texts, seen = [], set()
    while len(texts) < rows:
        text = " ".join(sentence(rng) for _ in range(rng.randint(1, 3)))
        if text not in seen:
            seen.add(text)
            texts.append(text)
    return texts


def queries(n, seed):
    rng = random.Random(seed + 1)
    return [f"what did {rng.choice(SUBJECTS)} do about {rng.choice(OBJECTS)}"
            if i % 2 else f"{rng.choice(OBJECTS)} {rng.choice(WHEN)}" for i in range(n)]


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())


def embed_all(url, texts):
    out = []
    for i in range(0, len(texts), 100):
        out.extend(post(url, {"texts": texts[i:i + 100]})["embeddings"])
    return out


def write_jsonl(path, texts, vectors, seed):
    rng = random.Random(seed + 2)
    base = 1_600_000_000  # 2020-09: timestamps spread over about five years
    with open(path, "w") as f:
        f.write(json.dumps({"_type": "header", "version": "cpersona-export/1.0", "agent_id": ""}) + "\n")
        for i, (text, vec) in enumerate(zip(texts, vectors)):
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S+00:00",
                                  time.gmtime(base + rng.randint(0, 5 * 365 * 86400)))
            blob = struct.pack(f"<{len(vec)}f", *vec)
            f.write(json.dumps({"_type": "memory", "agent_id": AGENT, "msg_id": f"m{i}",
                                "content": text, "timestamp": stamp, "created_at": stamp,
                                "source": {"type": "User", "id": "u"}, "metadata": {},
                                "embedding_b64": base64.b64encode(blob).decode("ascii")}) + "\n")


def pct(samples, q):
    s = sorted(samples)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def base_env(db, embed_url):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CPERSONA_")}
    env.update(CPERSONA_DB_PATH=db, CPERSONA_EMBEDDING_MODE="http", CPERSONA_EMBEDDING_URL=embed_url,
               CPERSONA_MAX_IMPORT_BYTES=str(4 << 30), CPERSONA_FUSED_GATE_ENABLED="false",
               CPERSONA_AUTOCUT_ENABLED="false", RUST_LOG="warn")
    return env


async def call(session, tool, args):
    result = await session.call_tool(tool, args)
    return json.loads(result.content[0].text)


async def session_run(params, fn):
    async with stdio_client(params, errlog=open(os.devnull, "w")) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await fn(session)


async def load(params, jsonl, rows, label):
    async def go(session):
        t = time.perf_counter()
        body = await call(session, "import_memories", {"input_path": jsonl})
        took = time.perf_counter() - t
        got = body.get("imported_memories")
        if got != rows:
            raise SystemExit(f"{label}: imported {got} of {rows}: {json.dumps(body)[:400]}")
        return took
    return await session_run(params, go)


async def measure(params, qs, label):
    async def go(session):
        ms, tops = [], []
        for i, q in enumerate(qs):
            t = time.perf_counter()
            body = await call(session, "recall", {"agent_id": AGENT, "query": q, "limit": 10})
            took = (time.perf_counter() - t) * 1000
            if "messages" not in body:
                raise SystemExit(f"{label}: recall answered {json.dumps(body)[:400]}")
            if i >= WARMUP:
                ms.append(took)
                # Messages come in ascending relevance; the set is what we compare.
                tops.append({m.get("id") for m in body["messages"]})
        return ms, tops
    return await session_run(params, go)


async def rung(args, n, texts, vectors, qs, embed_url, out):
    work = os.path.join(out, f"work-{n}")
    subprocess.run(["rm", "-rf", work], check=True)
    os.makedirs(work)
    jsonl = os.path.join(work, "corpus.jsonl")
    write_jsonl(jsonl, texts[:n], vectors[:n], args.seed)
    rs_env = base_env(os.path.join(work, "rs.db"), embed_url)
    py_env = base_env(os.path.join(work, "py.db"), embed_url)
    py_env.update(CPERSONA_UPDATE_CHECK="false", CPERSONA_OPERATING_CONTEXT="off")
    # Settings for our server only (e.g. CPERSONA_RECALL_LEXICAL_CAP=off, to compare like with
    # like: CPersona ranks bm25 over every match).
    rs_env.update(dict(kv.split("=", 1) for kv in args.rs_set))
    rs = StdioServerParameters(command=args.binary, args=["serve"], env=rs_env)
    py = StdioServerParameters(command=args.python, args=["-m", "cpersona"], env=py_env)
    rs_load = await load(rs, jsonl, n, "cpersona-rs")
    t = time.perf_counter()
    subprocess.run([args.binary, "index", "rebuild"], env=rs_env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rs_index = time.perf_counter() - t
    py_load = await load(py, jsonl, n, "CPersona")
    rs_ms, rs_top = await measure(rs, qs, "cpersona-rs")
    py_ms, py_top = await measure(py, qs, "CPersona")
    overlap = sum(len(a & b) / 10 for a, b in zip(rs_top, py_top)) / max(1, len(rs_top))
    result = {
        "rows": n, "queries": len(rs_ms),
        "rs": {"import_s": rs_load, "index_rebuild_s": rs_index,
               "recall_p50_ms": pct(rs_ms, 0.5), "recall_p95_ms": pct(rs_ms, 0.95)},
        "cpersona": {"import_s": py_load,
                     "recall_p50_ms": pct(py_ms, 0.5), "recall_p95_ms": pct(py_ms, 0.95)},
        "ratio_p50_cpersona_over_rs": pct(py_ms, 0.5) / pct(rs_ms, 0.5),
        "ratio_p95_cpersona_over_rs": pct(py_ms, 0.95) / pct(rs_ms, 0.95),
        "top10_overlap": overlap,
    }
    subprocess.run(["rm", "-rf", work], check=True)
    return result


async def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--binary", required=True, help="the cpersona binary")
    p.add_argument("--python", default=sys.executable, help="the venv's python with cpersona")
    p.add_argument("--rungs", default="1000,10000")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--out", default="target/side_by_side")
    p.add_argument("--rs-set", action="append", default=[], metavar="NAME=VALUE",
                   help="a CPERSONA_* setting for cpersona-rs only (repeatable)")
    args = p.parse_args()
    if any("=" not in kv for kv in args.rs_set):
        p.error("--rs-set takes NAME=VALUE")
    rungs = [int(x) for x in args.rungs.split(",")]
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "CPERSONA_EMBEDDING_MODE"}
    env["RUST_LOG"] = "warn"
    serve = subprocess.Popen([args.binary, "embed-serve", "--http", f"127.0.0.1:{port}"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        embed_url = f"http://127.0.0.1:{port}/embed"
        caps = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/capabilities").read())
        model = caps.get("identity", {}).get("model")
        texts = corpus(max(rungs), args.seed)
        qs = queries(args.queries + WARMUP, args.seed)
        t = time.perf_counter()
        vectors = embed_all(embed_url, texts)
        print(f"embedded {len(texts)} rows with {model} in {time.perf_counter() - t:.1f} s", flush=True)
        results = []
        for n in rungs:
            r = await rung(args, n, texts, vectors, qs, embed_url, out)
            results.append(r)
            print(json.dumps(r), flush=True)
    finally:
        serve.terminate()
        serve.wait(timeout=10)
    report = {"command": " ".join(sys.argv), "embedder": model, "warmup": WARMUP,
              "transport": "stdio, official mcp client, one call at a time", "rungs": results}
    with open(os.path.join(out, "side_by_side.json"), "w") as f:
        json.dump(report, f, indent=2)
    print(f"\nembedder {model}; recall round trip over MCP stdio, limit 10, gate/autocut off")
    print(f"{'rows':>8} {'rs p50':>8} {'rs p95':>8} {'py p50':>8} {'py p95':>8} "
          f"{'p50 ×':>7} {'p95 ×':>7} {'top10 ∩':>8}")
    for r in results:
        print(f"{r['rows']:>8} {r['rs']['recall_p50_ms']:>8.2f} {r['rs']['recall_p95_ms']:>8.2f} "
              f"{r['cpersona']['recall_p50_ms']:>8.2f} {r['cpersona']['recall_p95_ms']:>8.2f} "
              f"{r['ratio_p50_cpersona_over_rs']:>7.2f} {r['ratio_p95_cpersona_over_rs']:>7.2f} "
              f"{r['top10_overlap']:>8.2f}")
    print(f"wrote {os.path.join(out, 'side_by_side.json')}")


if __name__ == "__main__":
    asyncio.run(main())
