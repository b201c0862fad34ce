#!/usr/bin/env python3
"""Fill a CPersona 2.6.14 store with CPersona's own import code, in-process (driver `--fill direct`).

Run with the venv's python and the server's environment (CPERSONA_DB_PATH and the rest, as the
driver sets them): `python seed_cpersona.py CORPUS.jsonl ROWS`. It opens the store with
CPersona's `init_db` and calls `do_import_memories` — the function behind the MCP
`import_memories` tool, which runs the whole file in one transaction — so the rows, their FTS
entries and their embeddings are what the MCP import writes.

One thing differs, and it changes a query plan, not an answer: the import's per-row msg_id
duplicate probe (`SELECT id FROM memories WHERE agent_id = ? AND project_id = ? AND msg_id = ?
LIMIT 1`) is planned by SQLite on `idx_memories_isolation (agent_id, project_id)`, which walks
every row of the agent already stored, so the import is quadratic (10K rows ~200 s on this
machine, 100K would take hours). Here that probe runs with `INDEXED BY idx_memories_dedup_msg_id`
(CPersona's own unique index on exactly these three columns, partial on `msg_id != ''`) and
the tautological `AND msg_id != ''` the partial index needs: the probe runs only when msg_id is
non-empty (`if msg_id:` in `_import_memory_record`), so it returns the same row. Every other
statement is CPersona's, unchanged. The script fails unless the probe was rewritten once per
row and the import reports every row imported.
"""

import asyncio
import json
import sys
import time

import aiosqlite

PROBE = "SELECT id FROM memories WHERE agent_id = ? AND project_id = ? AND msg_id = ? LIMIT 1"
PINNED = (
    "SELECT id FROM memories INDEXED BY idx_memories_dedup_msg_id"
    " WHERE agent_id = ? AND project_id = ? AND msg_id = ? AND msg_id != '' LIMIT 1"
)


def pin_probe():
    """Route the msg_id probe through the unique index; returns the rewrite counter."""
    rewritten = [0]
    original = aiosqlite.Connection.execute_fetchall

    async def execute_fetchall(self, sql, parameters=None):
        if sql == PROBE:
            rewritten[0] += 1
            sql = PINNED
        return await original(self, sql, parameters)

    aiosqlite.Connection.execute_fetchall = execute_fetchall
    return rewritten


async def seed(path, rows):
    # Imported after the caller's environment is in place: cpersona reads it at import time.
    from cpersona.admin_handlers import do_import_memories
    from cpersona.database import close_db, init_db

    rewritten = pin_probe()
    await init_db()
    try:
        t = time.perf_counter()
        body = await do_import_memories(path)
        took = time.perf_counter() - t
    finally:
        await close_db()
    if body.get("imported_memories") != rows or rewritten[0] != rows:
        raise SystemExit(f"seed: imported {body.get('imported_memories')} of {rows}, probe rewritten "
                         f"{rewritten[0]} times: {json.dumps(body)[:400]}")
    return took


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: seed_cpersona.py CORPUS.jsonl ROWS")
    took = asyncio.run(seed(sys.argv[1], int(sys.argv[2])))
    print(json.dumps({"import_s": took}))


if __name__ == "__main__":
    main()
