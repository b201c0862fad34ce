#!/usr/bin/env python3
"""Drive the real `cpersona` binary with a client nobody here wrote: the Python `mcp` SDK.

Over stdio and over streamable HTTP: initialize, list tools, a refused call; in `--mode full`
(once the engine is wired) also store, recall, get_contents, update, delete and an
export/import round trip. Over HTTP, a missing, wrong or same-length token gets 401 and writes
nothing, and the server refuses to start without a token. Exits non-zero on the first failure.

Usage: python mcp_client_test.py --binary target/debug/cpersona [--mode surface|full]
Needs: pip install mcp
"""

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

try:  # mcp >= 2: one name, headers through an httpx client.
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    def http_transport(url, headers):
        return streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
except ImportError:  # mcp 1.x
    from mcp.client.streamable_http import streamablehttp_client

    def http_transport(url, headers):
        return streamablehttp_client(url, headers=headers)

TOKEN = "python-client-test-token-0123456789"
REQUIRED_TOOLS = {
    "store", "recall", "recall_with_context", "get_contents", "archive_episode",
    "update_memory", "delete_memory", "delete_episode", "lock_memory", "unlock_memory",
    "get_profile", "update_profile", "list_memories", "list_episodes", "delete_agent_data",
    "export_memories", "import_memories", "merge_memories", "calibrate_threshold",
    "set_recall_precision", "get_recall_precision", "check_health", "get_queue_status",
    "pause_persistence", "resume_persistence", "persistence_status",
}


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def body_of(result):
    check(len(result.content) == 1, f"one content expected, got {result.content!r}")
    return json.loads(result.content[0].text)


async def call(session, tool, args):
    return body_of(await session.call_tool(tool, args))


async def contents_of(session, agent, memory_id):
    """The memory's whole text, through get_contents."""
    contents = await call(session, "get_contents", {"agent_id": agent, "refs": [f"mem:{memory_id}"]})
    return contents["items"][0]["content"]


async def exercise(session, mode, workdir, label):
    init = await session.initialize()
    # mcp >= 2 spells fields in snake case, 1.x in camel case.
    server_info = getattr(init, "server_info", None) or getattr(init, "serverInfo")
    check(server_info.name == "cpersona", f"{label}: server name {server_info.name}")
    for word in ("store", "recall", "archive_episode"):
        check(word in (init.instructions or ""), f"{label}: instructions lack {word}")
    names = {t.name for t in (await session.list_tools()).tools}
    check(REQUIRED_TOOLS <= names, f"{label}: missing tools {REQUIRED_TOOLS - names}")

    refused = await call(session, "recall", {"agent_id": "a", "query": "q", "limit": 500})
    check(refused.get("ok") is False, f"{label}: limit 500 not refused: {refused}")
    check("limit" in refused.get("error", ""), f"{label}: refusal does not name limit: {refused}")

    if mode != "full":
        return
    agent = f"py-{label}"
    stored = await call(session, "store", {"agent_id": agent, "content": "The user's cat is called Miso"})
    check(stored.get("result") == "stored", f"{label}: store: {stored}")
    check(isinstance(stored.get("id"), int), f"{label}: store id: {stored}")
    check(stored.get("advisory", {}).get("degraded") is True,
          f"{label}: the hash fallback must carry the degraded advisory: {stored}")
    memory_id = stored["id"]
    again = await call(session, "store", {"agent_id": agent, "content": "The user's cat is called Miso"})
    check(again.get("result") == "skipped" and again.get("id") == memory_id, f"{label}: dedup: {again}")
    await call(session, "store", {"agent_id": agent, "content": "The user works on a memory server"})
    recalled = await call(session, "recall", {"agent_id": agent, "query": "what is the cat called"})
    refs = [m.get("ref") for m in recalled.get("messages", [])]
    check(f"mem:{memory_id}" in refs, f"{label}: recall misses the cat: {recalled}")
    text = await contents_of(session, agent, memory_id)
    check(text == "The user's cat is called Miso", f"{label}: content {text!r}")
    updated = await call(session, "update_memory", {"agent_id": agent, "memory_id": memory_id, "content": "The user's cat is called Mochi"})
    check(updated.get("ok") is True, f"{label}: update: {updated}")
    text = await contents_of(session, agent, memory_id)
    check(text == "The user's cat is called Mochi", f"{label}: content after update {text!r}")
    # A bare name lands in the default export folder, `exports/` beside the database.
    export_path = f"{label}.jsonl"
    exported = await call(session, "export_memories", {"agent_id": agent, "output_path": export_path})
    check(exported.get("memories") == 2, f"{label}: export: {exported}")
    landed = os.path.realpath(os.path.join(workdir, "exports", export_path))
    check(exported.get("path") == landed, f"{label}: export path: {exported}")
    deleted = await call(session, "delete_memory", {"agent_id": agent, "memory_id": memory_id})
    check(deleted.get("deleted_id") == memory_id, f"{label}: delete: {deleted}")
    imported = await call(session, "import_memories", {"input_path": export_path, "target_agent_id": f"{agent}-copy"})
    check(imported.get("imported_memories") == 2, f"{label}: import: {imported}")
    listed = await call(session, "list_memories", {"agent_id": f"{agent}-copy"})
    check(listed.get("count") == 2, f"{label}: list after import: {listed}")

    # Resources and prompts (issue 21): the copied rows are listed and read back whole.
    uris, cursor = [], None
    while True:
        page = await session.list_resources(cursor) if cursor else await session.list_resources()
        uris += [str(r.uri) for r in page.resources]
        cursor = getattr(page, "next_cursor", None) or getattr(page, "nextCursor", None)
        if not cursor:
            break
    mine = [u for u in uris if f"/agents/{agent}-copy/memories/" in u]
    check(len(mine) == 2, f"{label}: resources of the copy: {uris}")
    texts = sorted([(await session.read_resource(u)).contents[0].text for u in mine])
    check(texts == ["The user works on a memory server", "The user's cat is called Mochi"],
          f"{label}: resource texts {texts}")
    prompts = {p.name for p in (await session.list_prompts()).prompts}
    check({"start_session", "remember_this", "what_do_i_know", "end_session"} <= prompts,
          f"{label}: prompts {prompts}")
    got = await session.get_prompt("what_do_i_know", {"agent_id": agent, "topic": "the cat"})
    check("`recall`" in got.messages[0].content.text, f"{label}: prompt {got}")


def child_env(workdir, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CPERSONA_")}
    env["CPERSONA_DB_PATH"] = os.path.join(workdir, "cpersona.db")
    # The hashed n-gram embedder: no model files, deterministic, reports itself degraded.
    env["CPERSONA_EMBEDDING_MODE"] = "none"
    env.update(extra)
    return env


async def over_stdio(binary, mode, workdir):
    params = StdioServerParameters(command=binary, args=["serve"], env=child_env(workdir))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await exercise(session, mode, workdir, "stdio")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def raw_post(url, headers):
    payload = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": "store", "arguments": {"agent_id": "intruder", "content": "should never land"}}}).encode()
    request = urllib.request.Request(url, data=payload, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


async def over_http(binary, mode, workdir):
    refused = subprocess.run([binary, "serve", "--http", "127.0.0.1:0"], env=child_env(workdir),
                             capture_output=True, text=True, timeout=30)
    check(refused.returncode != 0 and "CPERSONA_AUTH_TOKEN" in refused.stderr,
          f"HTTP started without a token: rc={refused.returncode} {refused.stderr}")

    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    server = subprocess.Popen([binary, "serve", "--http", f"127.0.0.1:{port}"],
                              env=child_env(workdir, CPERSONA_AUTH_TOKEN=TOKEN),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                check(time.time() < deadline, "HTTP server did not start")
                if server.poll() is not None:
                    raise AssertionError(f"HTTP server exited with {server.returncode}")
                time.sleep(0.1)
        same_length = ("x" if TOKEN[0] != "x" else "y") + TOKEN[1:]
        for what, headers in [("missing", {}), ("wrong", {"Authorization": "Bearer nope"}),
                              ("same length", {"Authorization": f"Bearer {same_length}"})]:
            status = raw_post(url, headers)
            check(status == 401, f"{what} token: HTTP {status}, expected 401")
        async with http_transport(url, {"Authorization": f"Bearer {TOKEN}"}) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await exercise(session, mode, workdir, "http")
                if mode == "full":
                    listed = await call(session, "list_memories", {"agent_id": "intruder"})
                    check(listed.get("count") == 0, f"a 401 request wrote rows: {listed}")
    finally:
        server.terminate()
        server.wait(timeout=10)


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--mode", choices=["surface", "full"], default="surface")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        await over_stdio(args.binary, args.mode, workdir)
        await over_http(args.binary, args.mode, workdir)
    print(f"mcp_client_test: ok ({args.mode})")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except AssertionError as failure:
        print(f"mcp_client_test: FAILED: {failure}", file=sys.stderr)
        sys.exit(1)
