#!/usr/bin/env bash
# Set up the environment (see scripts/setup.sh) and run the test suite. Extra arguments go to pytest:
# -m "not slow" is the fast tier (unit and small integration tests, no recipe or training run
# beyond a few updates). The 20 slowest tests are printed at the end.
#
# The tests run on TEST_WORKERS pytest-xdist processes (default 2, the CI machine's cores; 0 runs
# them in this process), whole files to a worker so that a file's fixtures are built once; each
# worker's torch gets its share of the cores (tests/conftest.py). Much of the suite's time is
# subprocesses starting up (importing fairseq takes about 8 CPU-seconds), which two workers overlap.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/setup.sh"
venv=${FAIRSEQ_TREE_VENV:-$root/.venv}
cd "$root"
exec "$venv/bin/python" -m pytest -q -n "${TEST_WORKERS:-2}" --dist loadfile --durations=20 "$@"
