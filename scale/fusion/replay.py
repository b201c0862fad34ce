#!/usr/bin/env python3
"""Offline replay of fusion rules over frozen pools (issue 23).

`quality --dump-pools` writes, per task, split and embedder, one line per query: its subtask,
its relevant ids and every arm's list as Track B fused it (msg_id and raw score, in rank
order; gate off, Recall Depth 50). Fusion is the only stage that differs between the rules
below, so re-fusing those lists reproduces Track B's NDCG@10 exactly (the `fixed` and
`ratio` lines match the harness's own runs to the last digit) in seconds instead of a
harness run per rule: one change at a time, on frozen pools.

    cargo build --workspace --example quality
    bash scale/e5/quality.sh --tasks locomo,tmd,beir:target/tasks/manpages \
        --embedders hash,minilm,e5 --split dev,val --adaptive off --dump-pools --label pools
    python3 scale/fusion/replay.py --report target/quality/pools.json

Track A per subtask comes from the harness's JSON report (`--report`, repeatable). Each line
prints every rule's task score, its difference to `fixed`, `X<n>` when n subtasks lose more
than 2 points to Track A and the task is not above Track A, and `G` when a LoCoMo or TMD
task loses more than 0.5 points to `fixed` (issue 23's two rules).
"""
import argparse
import glob
import json
import math
import os
from collections import defaultdict

ORDER = ["vector_near", "vector_far", "episode_fts", "memory_keyword"]
LEXICAL = ("episode_fts", "memory_keyword")
DEPTH = 50


def load(path):
    out = []
    with open(path) as f:
        for line in f:
            q = json.loads(line)
            arms = {a: [(h[0], h[1]) for h in hits] for a, hits in q["arms"]}
            out.append((q["subtask"], set(q["relevant"]), arms))
    return out


def ndcg10(ranked, relevant):
    n = min(len(relevant), 10)
    if n == 0:
        return 0.0
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if d in relevant)
    return dcg / sum(1 / math.log2(i + 2) for i in range(n))


def standout(hits, min_scores=5):
    """(best - mean) / sd over the list's finite raw scores, as fusion_weights::standout."""
    s = [r for _, r in hits if r is not None and math.isfinite(r)]
    if len(s) < max(min_scores, 2):
        return None
    m = sum(s) / len(s)
    sd = math.sqrt(sum((x - m) ** 2 for x in s) / len(s))
    return (max(s) - m) / sd if sd > 1e-12 else None


def rrf(arms, weights, k=60.0):
    """RRF with the engine's order: score desc, then first arm in fusion order and rank."""
    score, first = {}, {}
    for ai, arm in enumerate(ORDER):
        for rank, (d, _) in enumerate(arms.get(arm, [])):
            if d is None:
                continue
            score[d] = score.get(d, 0.0) + weights.get(arm, 1.0) / (k + rank + 1)
            first.setdefault(d, (ai, rank))
    return sorted(score, key=lambda d: (-score[d], first[d]))


def fixed(arms):
    return rrf(arms, {})


def vector_only(arms):
    return rrf(arms, {a: 0.0 for a in LEXICAL})


def weighted(floor=0.0, power=1.0, only_full=False, reserve=math.inf):
    """The ratio rule: a lexical arm less decisive than the vector arm is weighed by
    clamp((z_lex / z_vec) ** power, floor, 1); only_full limits it to lists that filled the
    depth; reserve puts the vector arm's first row first when its standout reaches it."""
    def rule(arms):
        vec = arms.get("vector_near", [])
        zv = standout(vec) if vec else None
        w = {}
        for arm in LEXICAL:
            hits = arms.get(arm, [])
            if not hits or (only_full and len(hits) < DEPTH):
                continue
            zl = standout(hits)
            if zl is not None and zv is not None and 0 < zv and zl < zv:
                w[arm] = min(max((zl / zv) ** power, floor), 1.0)
        order = rrf(arms, w)
        if zv is not None and zv >= reserve and vec and vec[0][0] is not None:
            lead = vec[0][0]
            order = [lead] + [d for d in order if d != lead]
        return order
    return rule


def zscore_sum(arms):
    """Each arm's raw scores as z-scores over its own list (a list without scores: by rank),
    summed; a row an arm did not list takes that arm's lowest z."""
    per, first = {}, {}
    for ai, arm in enumerate(ORDER):
        hits = [(d, raw) for d, raw in arms.get(arm, []) if d is not None]
        if not hits:
            continue
        s = [raw if raw is not None else -rank for rank, (_, raw) in enumerate(hits)]
        m = sum(s) / len(s)
        sd = math.sqrt(sum((x - m) ** 2 for x in s) / len(s)) or 1.0
        z = {d: (x - m) / sd for (d, _), x in zip(hits, s)}
        per[arm] = (z, min(z.values()))
        for rank, (d, _) in enumerate(hits):
            first.setdefault(d, (ai, rank))
    score = {d: sum(z.get(d, low) for z, low in per.values()) for d in first}
    return sorted(first, key=lambda d: (-score[d], first[d]))


def overlap(top=10):
    """A lexical arm weighed by the share of its first `top` rows the vector list holds."""
    def rule(arms):
        vec = {d for d, _ in arms.get("vector_near", [])}
        w = {}
        for arm in LEXICAL:
            hits = [d for d, _ in arms.get(arm, [])][:top]
            if hits and vec:
                w[arm] = sum(d in vec for d in hits) / len(hits)
        return rrf(arms, w)
    return rule


def confirmed(depth=10, other=0.25, k=60.0):
    """A lexical vote counts fully for a row the vector arm ranks in its first `depth`,
    `other` of it otherwise."""
    def rule(arms):
        vrank = {d: r for r, (d, _) in enumerate(arms.get("vector_near", []))}
        score, first = {}, {}
        for ai, arm in enumerate(ORDER):
            for rank, (d, _) in enumerate(arms.get(arm, [])):
                if d is None:
                    continue
                w = other if arm in LEXICAL and vrank.get(d, depth) >= depth else 1.0
                score[d] = score.get(d, 0.0) + w / (k + rank + 1)
                first.setdefault(d, (ai, rank))
        return sorted(score, key=lambda d: (-score[d], first[d]))
    return rule


RULES = {
    "fixed": fixed,
    "vector_only": vector_only,
    "ratio": weighted(floor=0.25),
    "ratio_sq": weighted(power=2.0),
    "full": weighted(floor=0.25, only_full=True),
    "full_sq": weighted(power=2.0, only_full=True),
    "full_cube": weighted(power=3.0, only_full=True),
    "full_sq_res3.5": weighted(power=2.0, only_full=True, reserve=3.5),
    "full_sq_res4": weighted(power=2.0, only_full=True, reserve=4.0),
    "full_sq_res4.5": weighted(power=2.0, only_full=True, reserve=4.5),
    "full_sq_res5": weighted(power=2.0, only_full=True, reserve=5.0),
    "zscore_sum": zscore_sum,
    "overlap": overlap(),
    "confirmed": confirmed(),
}


def track_a(reports):
    out = {}
    for path in reports:
        with open(path) as f:
            for t in json.load(f)["tasks"]:
                out[(t["task"], t["embedder"])] = (
                    t["track_a"]["ndcg_at_10"],
                    {s["subtask"]: s["track_a"]["ndcg_at_10"] for s in t["subtasks"]},
                )
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pools", default="target/quality", help="folder of pools-*.jsonl")
    ap.add_argument("--report", action="append", required=True, help="harness JSON (Track A)")
    ap.add_argument("--rules", default=",".join(RULES), help="comma-separated rule names")
    args = ap.parse_args()
    rules = {name: RULES[name] for name in args.rules.split(",")}
    a_of = track_a(args.report)
    tally = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    for path in sorted(glob.glob(os.path.join(args.pools, "pools-*.jsonl"))):
        task, split, emb = os.path.basename(path)[6:-6].rsplit("-", 2)
        key = (f"{task} [{split}]", emb)
        if key not in a_of:
            continue
        a, a_sub = a_of[key]
        queries = load(path)
        cells, base = [], None
        for name, rule in rules.items():
            per = defaultdict(list)
            for subtask, relevant, arms in queries:
                per[subtask].append(ndcg10(rule(arms), relevant))
            subs = {s: 100 * sum(v) / len(v) for s, v in per.items()}
            score = sum(subs.values()) / len(subs)
            base = score if base is None else base
            failing = [s for s in subs if subs[s] - a_sub[s] < -2 - 1e-9]
            holds = score > a and not failing
            guard = task not in ("LoCoMo", "TMD") or score - base >= -0.5 - 1e-9
            t = tally[name][emb]
            t[0], t[1], t[2] = t[0] + holds, t[1] + 1, t[2] + (not guard)
            flag = ("" if holds else f" X{len(failing)}") + ("" if guard else " G")
            cells.append(f"{name} {score:6.2f} ({score - base:+5.2f}){flag}")
        print(f"{task:8} {split:3} {emb:6} A {a:6.2f} | " + " | ".join(cells))
    for name in rules:
        print(f"{name:15} " + "  ".join(
            f"{emb}: {h}/{n} hold, {g} guard broken" for emb, (h, n, g) in tally[name].items()))


if __name__ == "__main__":
    main()
