#!/usr/bin/env python3
"""Round-trip latency of `store` and `recall` through the Python `mcp` client, over stdio and
streamable HTTP, against a store of N rows (default 10,000), and the server's idle RSS.

The rows are imported with `cpersona import` (hash embedder), a first server drains the
embedding queue, `cpersona index rebuild` builds the generations (unless --no-rebuild), then
each transport times `--calls` stores and `--calls` recalls, one at a time, and
prints p50/p95 in milliseconds. Seeded: the same arguments give the same corpus and queries.

Usage: python scripts/mcp_latency.py --binary target/release/cpersona [--rows 10000] [--calls 200]
       [--trace] [--vocab N] [--stdio-only]
--trace asks each recall for its trace and prints the server's own time per stage beside the
round trip, so the share spent outside the engine (MCP, JSON, the client) is the difference.
--vocab N draws the words of the corpus and the queries from N synthetic words instead of the
36 common ones: with 36, each 3-word query matches most rows lexically.
Needs: pip install mcp
"""

import argparse
import asyncio
import json
import os
import random
import socket
import subprocess
import tempfile
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

try:  # mcp >= 2
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    def http_transport(url, headers):
        return streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
except ImportError:  # mcp 1.x
    from mcp.client.streamable_http import streamablehttp_client

    def http_transport(url, headers):
        return streamablehttp_client(url, headers=headers)

TOKEN = "latency-token-0123456789abcdef"
AGENT = "bench"
WORDS = ("cat dog tea coffee Kyoto Berlin report deadline Rust Python meeting budget garden "
         "piano violin train flight doctor dentist birthday invoice server database memory "
         "recall vector index kernel gate fusion lexical summary project channel").split()


def corpus(rows, seed):
    rng = random.Random(seed)
    for i in range(rows):
        yield f"note {i}: " + " ".join(rng.choice(WORDS) for _ in range(12))


def use_vocabulary(n):
    """Replaces the word list with n synthetic words (w0 .. w{n-1})."""
    global WORDS
    if n > 0:
        WORDS = [f"w{i}" for i in range(n)]


def env_for(workdir, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CPERSONA_")}
    env.update(CPERSONA_DB_PATH=os.path.join(workdir, "db.sqlite"), CPERSONA_EMBEDDING_MODE="none",
               RUST_LOG="warn")
    env.update(extra)
    return env


def fill(binary, workdir, rows, seed):
    path = os.path.join(workdir, "corpus.jsonl")
    with open(path, "w") as f:
        f.write(json.dumps({"_type": "header", "version": "cpersona-export/1.0", "agent_id": ""}) + "\n")
        for text in corpus(rows, seed):
            f.write(json.dumps({"_type": "memory", "agent_id": AGENT, "content": text,
                                "timestamp": "2026-01-01T00:00:00+00:00"}) + "\n")
    subprocess.run([binary, "import", path], env=env_for(workdir), check=True,
                   stdout=subprocess.DEVNULL)


def pct(samples, q):
    s = sorted(samples)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


async def call(session, tool, args):
    result = await session.call_tool(tool, args)
    return json.loads(result.content[0].text)


async def drained(session, label):
    deadline = time.time() + 600
    while (await call(session, "get_queue_status", {}))["pending"] > 0:
        if time.time() > deadline:
            raise SystemExit(f"{label}: the embedding queue did not drain")
        await asyncio.sleep(0.5)


async def prepare(binary, workdir, rebuild):
    """Lets a server drain the imported rows' embeddings, then builds the index generations."""
    params = StdioServerParameters(command=binary, args=["serve"], env=env_for(workdir))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await drained(session, "prepare")
    if rebuild:
        subprocess.run([binary, "index", "rebuild"], env=env_for(workdir), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


TRACE = False


async def measure(session, calls, seed, label):
    await session.initialize()
    await drained(session, label)
    rng = random.Random(seed + 1)
    stores, recalls, stages = [], [], {}
    for i in range(calls):
        text = f"{label} new fact {i}: " + " ".join(rng.choice(WORDS) for _ in range(10))
        t = time.perf_counter()
        body = await call(session, "store", {"agent_id": AGENT, "content": text})
        stores.append((time.perf_counter() - t) * 1000)
        assert body.get("result") == "stored", body
    for _ in range(calls):
        query = " ".join(rng.choice(WORDS) for _ in range(3))
        t = time.perf_counter()
        args = {"agent_id": AGENT, "query": query}
        if TRACE:
            args["trace"] = True
        body = await call(session, "recall", args)
        recalls.append((time.perf_counter() - t) * 1000)
        assert "messages" in body, body
        if TRACE:
            timings = body["trace"]["timings_ms"]
            for stage, ms in timings.items():
                stages.setdefault(stage, []).append(ms)
            stages.setdefault("engine_total", []).append(sum(timings.values()))
    for name, samples in (("store", stores), ("recall", recalls)):
        print(f"{label:6} {name:7} n={len(samples)} p50={pct(samples, 0.5):.2f} ms "
              f"p95={pct(samples, 0.95):.2f} ms")
    for name, samples in stages.items():
        print(f"{label:6} recall server {name:14} p50={pct(samples, 0.5):.2f} ms "
              f"p95={pct(samples, 0.95):.2f} ms")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


async def over_stdio(binary, workdir, calls, seed):
    params = StdioServerParameters(command=binary, args=["serve"], env=env_for(workdir))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await measure(session, calls, seed, "stdio")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def over_http(binary, workdir, calls, seed):
    port = free_port()
    server = subprocess.Popen([binary, "serve", "--http", f"127.0.0.1:{port}"],
                              env=env_for(workdir, CPERSONA_AUTH_TOKEN=TOKEN),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        time.sleep(2)
        print(f"idle RSS after start (HTTP, {workdir}): {rss_kib(server.pid) / 1024:.1f} MiB")
        url = f"http://127.0.0.1:{port}/mcp"
        async with http_transport(url, {"Authorization": f"Bearer {TOKEN}"}) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await measure(session, calls, seed, "http")
        time.sleep(1)
        print(f"idle RSS after the run (HTTP): {rss_kib(server.pid) / 1024:.1f} MiB")
    finally:
        server.terminate()
        server.wait(timeout=10)


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-rebuild", action="store_true",
                        help="measure with every row in the live tail (no index generation)")
    parser.add_argument("--trace", action="store_true",
                        help="print the server's own time per recall stage")
    parser.add_argument("--vocab", type=int, default=0,
                        help="draw corpus and queries from N synthetic words (0: the 36 common)")
    parser.add_argument("--stdio-only", action="store_true", help="skip the HTTP run")
    args = parser.parse_args()
    global TRACE
    TRACE = args.trace
    use_vocabulary(args.vocab)
    with tempfile.TemporaryDirectory() as workdir:
        t = time.perf_counter()
        fill(args.binary, workdir, args.rows, args.seed)
        print(f"imported {args.rows} rows in {time.perf_counter() - t:.1f} s")
        await prepare(args.binary, workdir, not args.no_rebuild)
        print("index generations:", "none (live tail only)" if args.no_rebuild else "rebuilt")
        await over_stdio(args.binary, workdir, args.calls, args.seed)
        if not args.stdio_only:
            await over_http(args.binary, workdir, args.calls, args.seed)


if __name__ == "__main__":
    asyncio.run(main())
