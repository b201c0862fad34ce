#!/usr/bin/env python3
"""CPersona itself writes a store, for the conversion test (server/tests/it/migrate.rs): 2.6.14
from the venv, or a 2.5-line release installed apart (`--cpersona-path DIR`, put first on
PYTHONPATH; `--line 2.5` skips the associations, which that line does not have).

`fill`: runs `python -m cpersona` (the PyPI package, installed by scripts/test) over MCP stdio with
the official `mcp` client, CPERSONA_DB_PATH=--db and its embeddings from `--embed-url` (a
`cpersona embed-serve`, so both servers embed with one model), and stores memories (some locked,
with metadata, sources, msg_ids and timestamps, two projects and a channel), episodes, a profile,
associations (entities with aliases, mentions, relations) and a few recalls (recall counters).
Prints what it did as JSON on stdout.

`recall`: asks the same queries of CPersona over --db and of cpersona-rs (`--binary`) over
--ours, limit 10, and prints each server's top-10 ids per query as JSON.
"""

import argparse
import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

AGENT = "conv"
OTHER = "other"

MEMORIES = [
    # (content, extra args, lock)
    ("Aiko booked the flight to Kyoto for the spring conference in April.",
     {"metadata": {"topic": "travel", "priority": 2}, "source": {"type": "User", "id": "discord:1", "name": "Aiko"},
      "timestamp": "2025-03-01T09:30:00+09:00", "id": "msg-1"}, True),
    ("The database migration moved every table to the new cluster without downtime.",
     {"source": {"type": "Agent", "id": "agent:ops"}, "timestamp": "2025-03-02T10:00:00Z"}, False),
    ("Ben prefers green tea over coffee in the mornings.",
     {"metadata": {"kind": "preference"}, "timestamp": "2025-02-11T08:15:00+00:00", "id": "msg-3"}, True),
    ("The garden fence needs painting before the summer.", {"project_id": "home"}, False),
    ("Carla fixed the kernel patch that broke the build on Tuesday.",
     {"project_id": "work", "channel": "dev", "timestamp": "2025-01-21T17:45:00-05:00"}, False),
    ("The budget review was postponed until the end of the quarter.", {}, False),
    ("Dmitri plays the violin in the city orchestra on weekends.",
     {"source": {"type": "User", "id": "discord:2"}}, False),
    ("Elena's birthday dinner is at the Italian place on Friday at seven.",
     {"timestamp": "2025-04-04T19:00:00+02:00"}, True),
    ("The vector index rebuild takes about four minutes at one million rows.",
     {"metadata": {"bench": True}}, False),
    ("Farid cancelled the piano lesson because he was ill.", {}, False),
    ("Grace moved the team retro to Thursday afternoon.", {"channel": "dev"}, False),
    ("Hiro paid the tax return online yesterday evening.", {}, False),
]

EPISODES = [
    {"summary": "Planning session for the Kyoto trip: flights booked, hotel still open.",
     "keywords": "kyoto travel flights", "history": [
         {"role": "user", "content": "book the flight", "timestamp": "2025-03-01T09:00:00Z"},
         {"role": "assistant", "content": "done", "timestamp": "2025-03-01T09:40:00Z"}]},
    {"summary": "Ops review of the database migration and its rollback plan.",
     "keywords": "database migration ops", "resolved": True},
]


CPERSONA_PATH = None


def params(db, embed_url, env_extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CPERSONA_")}
    if CPERSONA_PATH:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [CPERSONA_PATH, env.get("PYTHONPATH")]))
    # No update check: a test never reaches the network (2.5.12 asks PyPI by default).
    env.update(CPERSONA_DB_PATH=db, CPERSONA_EMBEDDING_MODE="http", CPERSONA_EMBEDDING_URL=embed_url,
               CPERSONA_EXPORT_DIR=os.path.dirname(os.path.abspath(db)), CPERSONA_UPDATE_CHECK="false")
    env.update(env_extra or {})
    return StdioServerParameters(command=sys.executable, args=["-m", "cpersona"], env=env)


async def call(session, tool, args):
    result = await session.call_tool(tool, args)
    text = result.content[0].text if result.content else "{}"
    try:
        return json.loads(text)
    except ValueError:
        return {"raw": text}


def store_args(line, agent, content, extra):
    """`store`'s arguments: top level in 2.6; in 2.5 the row is a `message` object
    ({id, content, source, timestamp, metadata}) beside agent_id, project_id and channel."""
    if line == "2.6":
        return {"agent_id": agent, "content": content, **extra}
    top = {k: v for k, v in extra.items() if k in ("project_id", "channel")}
    message = {k: v for k, v in extra.items() if k not in top}
    return {"agent_id": agent, "message": {"content": content, **message}, **top}


async def fill(args):
    done = {"memories": [], "locked": [], "episodes": [], "recalls": [], "associations": None}
    # Recall counters are written only with confidence on (CPersona #361 item 7).
    server = params(args.db, args.embed_url, {"CPERSONA_CONFIDENCE_ENABLED": "true"})
    async with stdio_client(server, errlog=open(os.devnull, "w")) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            for content, extra, lock in MEMORIES:
                body = await call(s, "store", store_args(args.line, AGENT, content, extra))
                if body.get("result") != "stored":
                    raise SystemExit(f"store failed: {body}")
                done["memories"].append(body["id"])
                if lock:
                    locked = await call(s, "lock_memory", {"agent_id": AGENT, "memory_id": body["id"]})
                    done["locked"].append((body["id"], locked))
            other = await call(s, "store", store_args(args.line, OTHER, "Another agent's note about Kyoto.", {}))
            done["memories"].append(other.get("id"))
            for ep in EPISODES:
                body = await call(s, "archive_episode", {"agent_id": AGENT, **ep})
                done["episodes"].append(body)
            done["profile"] = await call(s, "update_profile", {
                "agent_id": AGENT, "profile": "Works on databases; travels to Kyoto in spring."})
            first = done["memories"][0]
            if args.line == "2.6":
                done["associations"] = await call(s, "declare_associations", {
                    "agent_id": AGENT, "anchor_ref": f"mem:{first}",
                    "associations": {
                        "entities": [{"name": "Aiko", "aliases": ["Aiko-san"]}, {"name": "Kyoto"}],
                        "relations": [{"subject": "Aiko", "predicate": "travels to", "object": "Kyoto"},
                                      {"subject": "Aiko", "predicate": "booked", "object": f"mem:{first}"}]}})
            for q in ("flight to Kyoto", "green tea", "database migration", "flight to Kyoto"):
                body = await call(s, "recall", {"agent_id": AGENT, "query": q, "limit": 5})
                done["recalls"].append([m.get("ref") for m in body.get("messages", [])])
    print(json.dumps(done))


async def top10(server, queries):
    out = []
    async with stdio_client(server, errlog=open(os.devnull, "w")) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            for q in queries:
                body = await call(s, "recall", {"agent_id": AGENT, "query": q, "limit": 10})
                if "messages" not in body:
                    raise SystemExit(f"recall answered {json.dumps(body)[:400]}")
                # Both list messages in ascending relevance (the best last). Where every row
                # reports its fused score, rows are put best first by it (ties keep their
                # order); CPersona 2.5 does not always report it, so its list is reversed.
                msgs = body["messages"]
                if all((m.get("match_reason") or {}).get("rrf") is not None for m in msgs):
                    msgs = sorted(msgs, key=lambda m: -float(m["match_reason"]["rrf"]))
                else:
                    msgs = list(reversed(msgs))
                out.append([m.get("ref") or f"mem:{m.get('id')}" for m in msgs])
    return out


async def recall(args):
    queries = json.loads(args.queries)
    # Gate, autocut and the similarity floor off on CPersona's side, so its top 10 is a
    # ranking, not a cut (cpersona-rs with its gate off returns its ranking).
    theirs = await top10(params(args.db, args.embed_url, {
        "CPERSONA_FUSED_GATE_ENABLED": "false", "CPERSONA_AUTOCUT_ENABLED": "false",
        "CPERSONA_VECTOR_MIN_SIMILARITY": "0"}), queries)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CPERSONA_")}
    env.update(CPERSONA_DB_PATH=args.ours, CPERSONA_EMBEDDING_MODE="http",
               CPERSONA_EMBEDDING_URL=args.embed_url, CPERSONA_FUSED_GATE_ENABLED="false",
               RUST_LOG="warn")
    ours = await top10(StdioServerParameters(command=args.binary, args=["serve"], env=env), queries)
    print(json.dumps({"cpersona": theirs, "ours": ours}))


async def tools(args):
    """CPersona's tools/list: each tool's name and its arguments' JSON types."""
    server = params(args.db, args.embed_url)
    async with stdio_client(server, errlog=open(os.devnull, "w")) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            listed = await s.list_tools()
    out = []
    for tool in listed.tools:
        props = (tool.inputSchema or {}).get("properties") or {}
        out.append({"name": tool.name,
                    "arguments": {k: v.get("type") for k, v in props.items()},
                    "required": (tool.inputSchema or {}).get("required") or []})
    print(json.dumps(out))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("action", choices=["fill", "recall", "tools"])
    p.add_argument("--db", required=True)
    p.add_argument("--embed-url", required=True)
    p.add_argument("--ours")
    p.add_argument("--binary")
    p.add_argument("--queries", default="[]")
    p.add_argument("--cpersona-path", help="a folder holding another cpersona release")
    p.add_argument("--line", choices=["2.6", "2.5"], default="2.6")
    args = p.parse_args()
    global CPERSONA_PATH
    CPERSONA_PATH = args.cpersona_path
    asyncio.run({"fill": fill, "recall": recall, "tools": tools}[args.action](args))


if __name__ == "__main__":
    main()
