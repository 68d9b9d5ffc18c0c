#!/usr/bin/env bash
# Set up the environment (see scripts/setup.sh) and run the test suite. Extra arguments go to pytest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/setup.sh"
venv=${FAIRSEQ_TREE_VENV:-$root/.venv}
cd "$root"
exec "$venv/bin/python" -m pytest -q "$@"
