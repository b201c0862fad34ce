#!/usr/bin/env bash
# cpersona-rs vs CPersona 2.6.14 side by side (see driver.py): installs CPersona into a venv
# under target/side_by_side/venv, builds the cpersona binary (dev profile) if needed, and runs
# the driver. Usage: scale/side_by_side/run.sh [RUNGS=1000,10000] [QUERIES=200] [DRIVER OPTIONS ...]
# e.g. --rs-set NAME=VALUE (a setting for cpersona-rs only), --set NAME=VALUE (for both servers,
# e.g. CPERSONA_MAX_MEMORIES=200000, the vector scan window), --fill direct (seed CPersona's store
# with its own import code in-process instead of its quadratic MCP import: the 100K rung),
# --fill direct --check-fill (also fill it through MCP and compare: run at 1000),
# --no-rebuild (no `cpersona index rebuild` after our import: serve keeps its index fresh itself).
# Set CPERSONA_MODEL_DIR to the MiniLM folder to share MiniLM; otherwise the hash embedder.
# Set CPERSONA_BIN to a built binary (the optimised one: target/release/cpersona after
# `cargo build --profile bench --workspace --bin cpersona`) to skip the dev build.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
rungs=${1:-1000,10000}
queries=${2:-200}
out="$root/target/side_by_side"
venv="$out/venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import cpersona' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet cpersona==2.6.14
fi
bin=${CPERSONA_BIN:-$root/target/debug/cpersona}
if [ -z "${CPERSONA_BIN:-}" ]; then
  cargo build --quiet --workspace --bin cpersona
fi
# The client: the driver runs under CPersona's venv (mcp 1.x, which CPersona 2.6.14 pins) unless
# SBS_CLIENT_PYTHON names another interpreter, e.g. a venv with mcp 2.x, whose SDK compiles each
# tool's output schema once instead of on every call; `--client raw` times the servers alone.
client=${SBS_CLIENT_PYTHON:-$venv/bin/python}
exec "$client" "$root/scale/side_by_side/driver.py" --binary "$bin" \
  --python "$venv/bin/python" --rungs "$rungs" --queries "$queries" --out "$out" "${@:3}"
