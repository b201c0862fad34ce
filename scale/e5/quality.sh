#!/usr/bin/env bash
# The quality table of issue 23 in one command: starts the e5-small server (scale/e5/serve.py,
# its venv made by scale/e5/setup.sh), assembles the BEIR tasks if they are missing
# (scale/tasks/assemble.py), runs the quality example against it, and stops the server.
# Arguments go to the example; without any, the baseline of scale/RESULTS.md:
#   --tasks locomo,tmd,beir:target/tasks/manpages --embedders hash,minilm,e5 --split dev,val
# Environment: QUALITY_BIN (default target/debug/examples/quality; build it with
# `cargo build --workspace --example quality`), CPERSONA_MODEL_DIR (default
# target/test-deps/all-MiniLM-L6-v2), E5_PORT (default 8765), E5_THREADS (default all cores).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
bash scale/e5/setup.sh >&2
[[ -f target/tasks/manpages/corpus.jsonl && -f target/tasks/pyfaq/corpus.jsonl ]] \
    || python3 scale/tasks/assemble.py >&2
bin="${QUALITY_BIN:-target/debug/examples/quality}"
[[ -x "$bin" ]] || { echo "no $bin: cargo build --workspace --example quality" >&2; exit 1; }
port="${E5_PORT:-8765}"
target/e5-venv/bin/python scale/e5/serve.py --port "$port" --threads "${E5_THREADS:-0}" >&2 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
# Wait (bounded) until the server answers its capabilities.
target/e5-venv/bin/python - "$port" <<'EOF'
import sys, time, urllib.request
url = "http://127.0.0.1:%s/passage/capabilities" % sys.argv[1]
for _ in range(120):
    try:
        urllib.request.urlopen(url, timeout=2).read()
        sys.exit(0)
    except OSError:
        time.sleep(0.5)
sys.exit("e5 server did not answer in 60 s: " + url)
EOF
if [[ $# -eq 0 ]]; then
    set -- --tasks locomo,tmd,beir:target/tasks/manpages --embedders hash,minilm,e5 --split dev,val
fi
CPERSONA_MODEL_DIR="${CPERSONA_MODEL_DIR:-$root/target/test-deps/all-MiniLM-L6-v2}" \
    "$bin" --e5-url "http://127.0.0.1:$port" "$@"
