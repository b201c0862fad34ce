#!/usr/bin/env python3
"""cpersona-rs and CPersona 2.6.14 side by side: one embedding, one corpus, one set of queries.

`cpersona embed-serve` serves one embedder (the builtin MiniLM when CPERSONA_MODEL_DIR is set,
else the hash embedder) on CPersona's HTTP embedding contract. The driver embeds a seeded
corpus through it once, writes one JSONL file (rows with `embedding_b64`), and for each rung
imports it into a fresh store of each server through MCP `import_memories` (stdio, the official
`mcp` client). Both servers embed queries through the same embed-serve
(CPERSONA_EMBEDDING_MODE=http), so a query costs each one HTTP round trip. After the import the
Rust store's index generation is built with `cpersona index rebuild` (the operator's step), or,
with `--no-rebuild`, not at all: `serve` keeps its index fresh itself (issue 16), and the
result records `cpersona index status` (read only) before and after the queries; CPersona is
used as shipped. Then each server answers the same queries (limit 10, gate and
autocut off so the top 10 is a ranking, not a cut), after a warm-up; we report recall
round-trip p50/p95 per server, the ratio CPersona / cpersona-rs, and the mean overlap of their
top-10 ids (|A ∩ B| / 10).

The servers run side by side and each query goes to each in turn (the order rotating every
query), so a load change on this shared machine falls on all alike.

`--fill direct` fills CPersona's store without its MCP import, whose cost grows quadratically
(10K rows ~200 s here; 100K would take hours): the CPersona server is started once on the empty
store (its own startup, as before an MCP import), then `seed_cpersona.py` runs CPersona's own
`do_import_memories` in-process on the same file (see that script for the one query plan it
pins and why the answer is unchanged). The time reported for it is that seeding's, not
CPersona's MCP import time. cpersona-rs is still filled through MCP. `--check-fill` (with
`--fill direct`) also fills two more stores through CPersona's MCP import and reports whether
the seeded store holds the same rows as an MCP-filled one (every table compared, FTS and
embeddings included) and answers the queries the same (whole messages, ordered ids, id-set
Jaccard), beside the same comparison between the two MCP-filled stores: CPersona's answers
vary from run to run, so that is the baseline. This is the test that the seeding is faithful;
run it at a rung where the MCP import is affordable (1K).

Usage: python driver.py --binary target/debug/cpersona --rungs 1000,10000 [--queries 200]
       python driver.py --binary target/debug/cpersona --rungs 1000 --no-rebuild
       python driver.py --binary target/release/cpersona --rungs 1000 --fill direct --check-fill
       python driver.py --binary target/release/cpersona --rungs 100000 --fill direct
"""

import argparse
import asyncio
import base64
import contextlib
import hashlib
import json
import os
import random
import socket
import sqlite3
import struct
import subprocess
import sys
import time
import urllib.request

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

AGENT = "sbs"
WARMUP = 20
SEED_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seed_cpersona.py")
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
    # Both servers confined to the rung's work folder, which holds the corpus file and the stores.
    # (Not "/": CPersona 2.6.14 tests realpath(path).startswith(root + os.sep), "//" for "/",
    # and refuses every path.)
    env.update(CPERSONA_DB_PATH=db, CPERSONA_EXPORT_DIR=os.path.dirname(os.path.abspath(db)),
               CPERSONA_EMBEDDING_MODE="http", CPERSONA_EMBEDDING_URL=embed_url,
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
        body = await call(session, "import_memories", {"input_path": os.path.abspath(jsonl)})
        took = time.perf_counter() - t
        got = body.get("imported_memories")
        if got != rows:
            raise SystemExit(f"{label}: imported {got} of {rows}: {json.dumps(body)[:400]}")
        return took
    return await session_run(params, go)


class RawSession:
    """A bare JSON-RPC 2.0 client over a server's stdio (newline-delimited messages, as both
    servers speak them): `initialize`, then `tools/call`, each answer read back and its text
    parsed. No SDK: what it times is the servers' round trip, without the client-side work an
    SDK adds (pydantic parsing, and for a tool with an output schema the validation of its
    `structuredContent`, which CPersona 2.6.14 does not declare and so never pays)."""

    def __init__(self, params):
        self.params = params
        self.next_id = 0

    async def __aenter__(self):
        self.proc = await asyncio.create_subprocess_exec(
            self.params.command, *self.params.args, env=self.params.env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            limit=1 << 26)
        await self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                          "clientInfo": {"name": "side-by-side", "version": "1"}})
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {}})
        return self

    async def __aexit__(self, *exc):
        self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except asyncio.TimeoutError:
            self.proc.kill()

    async def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        await self.proc.stdin.drain()

    async def request(self, method, params):
        self.next_id += 1
        await self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                raise SystemExit(f"{self.params.command}: stdout closed")
            message = json.loads(line)
            if message.get("id") == self.next_id:
                return message["result"]

    async def call_tool(self, tool, args):
        result = await self.request("tools/call", {"name": tool, "arguments": args})
        return json.loads(result["content"][0]["text"])


def client_label(client):
    """What timed the recalls: `raw`, or the SDK and its version."""
    if client == "raw":
        return "raw JSON-RPC"
    from importlib.metadata import version
    return f"mcp {version('mcp')} (Python SDK)"


async def measure(servers, qs, client="sdk"):
    """Ask every server each query in turn (the order rotating per query) over sessions held
    open side by side, through the Python `mcp` SDK or (`client="raw"`) a bare JSON-RPC client.
    Returns per server (ms, top-10 id sets, messages) after the warm-up."""
    async with contextlib.AsyncExitStack() as stack:
        sessions = []
        for params, _ in servers:
            if client == "raw":
                sessions.append(await stack.enter_async_context(RawSession(params)))
                continue
            read, write = await stack.enter_async_context(
                stdio_client(params, errlog=open(os.devnull, "w")))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            sessions.append(session)
        out = [([], [], []) for _ in servers]
        for i, q in enumerate(qs):
            for k in range(len(servers)):
                j = (i + k) % len(servers)
                label = servers[j][1]
                t = time.perf_counter()
                args = {"agent_id": AGENT, "query": q, "limit": 10}
                if client == "raw":
                    body = await sessions[j].call_tool("recall", args)
                else:
                    body = await call(sessions[j], "recall", args)
                took = (time.perf_counter() - t) * 1000
                if "messages" not in body:
                    raise SystemExit(f"{label}: recall answered {json.dumps(body)[:400]}")
                if i >= WARMUP:
                    ms, tops, messages = out[j]
                    ms.append(took)
                    # Messages come in ascending relevance; the set is what we compare.
                    tops.append({m.get("id") for m in body["messages"]})
                    messages.append(body["messages"])
        return out


async def our_stages(params, qs):
    """Where our recall spends its time: the same queries again, traced, after the timed
    run (so the trace costs nothing there). Median ms per stage of the trace's `timing_ms`."""
    async def go(session):
        per = {}
        for q in qs[WARMUP:]:
            body = await call(session, "recall",
                              {"agent_id": AGENT, "query": q, "limit": 10, "trace": True})
            for stage, ms in (body.get("trace") or {}).get("timing_ms", {}).items():
                per.setdefault(stage, []).append(ms)
        return {stage: round(pct(ms, 0.5), 3) for stage, ms in sorted(per.items())}
    return await session_run(params, go)


def table_digests(db):
    """sha256 of every ordinary table's rows (sorted), by table: FTS shadow tables included.
    schema_version is read without its applied_at, the wall-clock time the store was created."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        names = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'"
            " ORDER BY name")]
        out = {}
        for name in names:
            cols = "version" if name == "schema_version" else "*"
            rows = sorted(repr(r) for r in con.execute(f'SELECT {cols} FROM "{name}"'))
            out[name] = (len(rows), hashlib.sha256("\n".join(rows).encode()).hexdigest()[:16])
        return out
    finally:
        con.close()


async def fill_cpersona(args, params, env, jsonl, n):
    """Fill CPersona's store: through MCP import_memories (seconds), or seeded directly
    ({total_s: server start on the empty store + seeding process, do_import_memories_s})."""
    if args.fill == "mcp":
        return await load(params, jsonl, n, "CPersona")
    t = time.perf_counter()

    async def started(_session):
        return None
    # The server's own startup on the empty store, as the MCP path has before its import.
    await session_run(params, started)
    done = subprocess.run([args.python, SEED_SCRIPT, jsonl, str(n)], env=env, check=True,
                          stdout=subprocess.PIPE, text=True)
    return {"total_s": time.perf_counter() - t,
            "do_import_memories_s": json.loads(done.stdout.splitlines()[-1])["import_s"]}


def seed_tables(seeded_db, mcp_db):
    """Compare a seeded CPersona store's tables with one filled through MCP, before any query."""
    a, b = table_digests(seeded_db), table_digests(mcp_db)
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    return {"compared": len(a | b), "rows_memories": a.get("memories", (0,))[0],
            "differing": {k: {"seeded": a.get(k), "mcp": b.get(k)} for k in differ}}


def answers_check(a_run, b_run):
    """Compare two CPersona stores' answers to the same queries: whole answers equal, ordered
    ids equal, and the mean Jaccard of the id sets (CPersona may answer more than 10 rows)."""
    (_, a_top, a_msg), (_, b_top, b_msg) = a_run, b_run
    a_ids = [[m.get("id") for m in x] for x in a_msg]
    b_ids = [[m.get("id") for m in x] for x in b_msg]
    return {
        "queries": len(a_msg),
        "same_messages": sum(x == y for x, y in zip(a_msg, b_msg)),
        "same_ordered_ids": sum(x == y for x, y in zip(a_ids, b_ids)),
        "id_jaccard": sum(len(x & y) / max(1, len(x | y)) for x, y in zip(a_top, b_top))
        / max(1, len(a_top)),
    }


def index_status(binary, env):
    """Our memories index as `cpersona index status` reports it (it reads, never writes)."""
    done = subprocess.run([binary, "index", "status"], env=env, check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    tables = json.loads(done.stdout)["tables"]
    m = next(t for t in tables if t["table"] == "memories")
    return {"segments": len(m["segments"]), "rows": m["rows"], "live_tail": m["live_tail"],
            "note": m.get("note")}


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
    # Settings for both servers (e.g. CPERSONA_MAX_MEMORIES, the vector scan window both honour).
    both = dict(kv.split("=", 1) for kv in args.set)
    rs_env.update(both)
    py_env.update(both)
    rs = StdioServerParameters(command=args.binary, args=["serve"], env=rs_env)
    py = StdioServerParameters(command=args.python, args=["-m", "cpersona"], env=py_env)
    rs_load = await load(rs, jsonl, n, "cpersona-rs")
    if args.no_rebuild:
        # The default path: no operator step; serve's own upkeep builds and flushes the index.
        rs_index = None
    else:
        t = time.perf_counter()
        subprocess.run([args.binary, "index", "rebuild"], env=rs_env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rs_index = time.perf_counter() - t
    rs_index_before = index_status(args.binary, rs_env)
    py_load = await fill_cpersona(args, py, py_env, jsonl, n)
    servers = [(rs, "cpersona-rs"), (py, "CPersona")]
    if args.check_fill:
        # Two stores filled through MCP: two equal CPersona stores do not always give the same
        # answer to the same query (measured), so MCP vs MCP is the baseline that seeded vs
        # MCP is read against.
        mcp_db = [os.path.join(work, f"py-mcp{k}.db") for k in (1, 2)]
        mcp = [StdioServerParameters(command=args.python, args=["-m", "cpersona"],
                                     env=dict(py_env, CPERSONA_DB_PATH=db)) for db in mcp_db]
        mcp_load = [await load(m, jsonl, n, "CPersona (MCP, --check-fill)") for m in mcp]
        py_db = os.path.join(work, "py.db")
        check = {"mcp_import_s": mcp_load,
                 "tables_seeded_vs_mcp": seed_tables(py_db, mcp_db[0]),
                 "tables_mcp_vs_mcp": seed_tables(mcp_db[1], mcp_db[0])}
        servers += [(mcp[0], "CPersona (MCP-filled)"), (mcp[1], "CPersona (MCP-filled, 2)")]
    load_before = os.getloadavg()
    runs = await measure(servers, qs, args.client)
    rs_index_after = index_status(args.binary, rs_env)
    rs_stages = await our_stages(rs, qs)
    (rs_ms, rs_top, _), (py_ms, py_top, _) = runs[0], runs[1]
    overlap = sum(len(a & b) / 10 for a, b in zip(rs_top, py_top)) / max(1, len(rs_top))
    result = {
        "rows": n, "queries": len(rs_ms), "fill": args.fill,
        "settings": {"both": args.set, "rs_only": args.rs_set},
        "client": client_label(args.client),
        "rs": {"import_s": rs_load, "index_rebuild_s": rs_index,
               "index_before_queries": rs_index_before, "index_after_queries": rs_index_after,
               "recall_p50_ms": pct(rs_ms, 0.5), "recall_p95_ms": pct(rs_ms, 0.95),
               "traced_stage_p50_ms": rs_stages},
        "cpersona": {("import_s" if args.fill == "mcp" else "direct_seed"): py_load,
                     "recall_p50_ms": pct(py_ms, 0.5), "recall_p95_ms": pct(py_ms, 0.95)},
        "ratio_p50_cpersona_over_rs": pct(py_ms, 0.5) / pct(rs_ms, 0.5),
        "ratio_p95_cpersona_over_rs": pct(py_ms, 0.95) / pct(rs_ms, 0.95),
        "top10_overlap": overlap,
        "loadavg_1m_before_after": [load_before[0], os.getloadavg()[0]],
    }
    if args.check_fill:
        check["answers_seeded_vs_mcp"] = answers_check(runs[1], runs[2])
        check["answers_seeded_vs_mcp2"] = answers_check(runs[1], runs[3])
        check["answers_mcp_vs_mcp2"] = answers_check(runs[2], runs[3])
        check["recall_p50_ms_seeded_mcp_mcp2"] = [pct(r[0], 0.5) for r in runs[1:]]
        result["fill_check"] = check
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
    p.add_argument("--fill", choices=("mcp", "direct"), default="mcp",
                   help="fill CPersona through its MCP import, or seed it directly (see above)")
    p.add_argument("--check-fill", action="store_true",
                   help="with --fill direct: also fill two CPersona stores through MCP and compare")
    p.add_argument("--rs-set", action="append", default=[], metavar="NAME=VALUE",
                   help="a CPERSONA_* setting for cpersona-rs only (repeatable)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="a CPERSONA_* setting for both servers (repeatable)")
    p.add_argument("--client", choices=("sdk", "raw"), default="sdk",
                   help="time recalls through the Python mcp SDK this driver runs under (its "
                        "version decides what validating each structured answer costs), or a "
                        "bare JSON-RPC client that times the servers alone")
    p.add_argument("--no-rebuild", action="store_true",
                   help="no `cpersona index rebuild` after our import: serve keeps the index "
                        "fresh itself (the default path a user runs)")
    args = p.parse_args()
    if any("=" not in kv for kv in args.rs_set + args.set):
        p.error("--rs-set and --set take NAME=VALUE")
    if args.check_fill and args.fill != "direct":
        p.error("--check-fill compares a direct fill with the MCP one: it needs --fill direct")
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
              "transport": f"stdio, {client_label(args.client)}, one call at a time, servers alternating",
              "rungs": results}
    with open(os.path.join(out, "side_by_side.json"), "w") as f:
        json.dump(report, f, indent=2)
    print(f"\nembedder {model}; recall round trip over MCP stdio ({client_label(args.client)}), "
          "limit 10, gate/autocut off")
    print(f"{'rows':>8} {'rs p50':>8} {'rs p95':>8} {'py p50':>8} {'py p95':>8} "
          f"{'p50 ×':>7} {'p95 ×':>7} {'top10 ∩':>8}")
    for r in results:
        print(f"{r['rows']:>8} {r['rs']['recall_p50_ms']:>8.2f} {r['rs']['recall_p95_ms']:>8.2f} "
              f"{r['cpersona']['recall_p50_ms']:>8.2f} {r['cpersona']['recall_p95_ms']:>8.2f} "
              f"{r['ratio_p50_cpersona_over_rs']:>7.2f} {r['ratio_p95_cpersona_over_rs']:>7.2f} "
              f"{r['top10_overlap']:>8.2f}")
    for r in results:
        py_fill = (f"CPersona MCP import {r['cpersona']['import_s']:.1f} s" if r["fill"] == "mcp" else
                   (f"CPersona direct seed {r['cpersona']['direct_seed']['total_s']:.1f} s, of which "
                   f"do_import_memories {r['cpersona']['direct_seed']['do_import_memories_s']:.1f} s"
                   " (not its MCP import time)"))
        rebuild = r["rs"]["index_rebuild_s"]
        rebuild = "no index rebuild" if rebuild is None else f"index rebuild {rebuild:.1f} s"
        print(f"{r['rows']:>8} rows: ours MCP import {r['rs']['import_s']:.1f} s + {rebuild}; "
              f"{py_fill}; load {r['loadavg_1m_before_after']}")
        print(f"{'':>8} our memories index before the queries {r['rs']['index_before_queries']}, "
              f"after {r['rs']['index_after_queries']}")
        print(f"{'':>8} our recall's stages (p50 ms, traced pass): {r['rs']['traced_stage_p50_ms']}")
        if "fill_check" in r:
            print(f"{'':>8} fill check: {json.dumps(r['fill_check'])}")
    print(f"wrote {os.path.join(out, 'side_by_side.json')}")


if __name__ == "__main__":
    asyncio.run(main())
