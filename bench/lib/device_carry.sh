#!/usr/bin/env bash
# What a call of bench/lib/device.sh carries, made here: .whl/ (the wheels that bench/lib/device_setup.sh
# installs there without the network) and .devdata/ (the quickstart's data-bin, which the figure
# steps read), and for a job list the recipe folders its commands read (RECIPES). All are ignored
# by git (or through .git/info/exclude); name them in the call's carry (64 MiB in all).
#
#   bash bench/lib/device_carry.sh          # then, one step a call:
#   run: DEADLINE=400 STEPS=account bash bench/lib/device.sh        carry: .whl .devdata
#   RECIPES="runs/data/bible-fr-en=devdata/data/bible-fr-en runs/data-rt-spacy/rt-snippets=devdata/rt-spacy/rt-snippets" \
#     bash bench/lib/device_carry.sh        # then: JOBS=bench/jobs/parser-trees-gpu.tsv ... carry: .whl devdata
#
# RECIPES: SOURCE=DEST pairs, each a recipe's output folder copied with what a job reads at test
# time (data-bin, and where the recipe made them recipe.json, ref/ and tok/test.*). WHEELS=0 makes
# no wheels (a later call on the warm machine has them installed).
#
# The wheels: every package of this environment's `pip freeze` for CPython 3.12 on x86-64 Linux
# (the lent machines' Python), less what a GPU image has (torch and CUDA's packages, numpy) and
# spaCy with its own (thinc, blis, ...), which would put the carry over its limit and which no
# step needs; IMAGE_PACKAGES, a file of the image's `python3 -m pip list --format freeze`
# (one first device call), leaves out what it lists as well. Then fairseq_tree's own wheel.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
py=${PYTHON:-.venv/bin/python}
# Names compare lower-case with - for _ (pip freeze and pip list spell them either way).
skip='^(torch|numpy|nvidia-|triton|sympy|networkx|mpmath|jinja2|markupsafe|filelock|fsspec|typing-extensions|setuptools|cython|spacy|thinc|blis|srsly|cymem|preshed|murmurhash|wasabi|weasel|catalogue|confection|spacy-|langcodes|language-data|marisa-trie|cloudpathlib|smart-open|typer|fr-core-news|en-core-web|matplotlib|contourpy|fonttools|kiwisolver|pillow|pytest|pluggy|iniconfig)'
for pair in ${RECIPES:-}; do
  from=${pair%%=*} to=${pair#*=}
  [ -d "$from/data-bin" ] || { echo "device_carry: no $from/data-bin" >&2; exit 1; }
  rm -rf "$to" && mkdir -p "$to"
  cp -r "$from/data-bin" "$to/"
  for extra in recipe.json ref; do [ -e "$from/$extra" ] && cp -r "$from/$extra" "$to/"; done
  if ls "$from"/tok/test.* >/dev/null 2>&1; then mkdir -p "$to/tok" && cp "$from"/tok/test.* "$to/tok/"; fi
  du -sh "$to"
done
[ "${WHEELS:-1}" = 1 ] || exit 0
[ -d data/bible-en-fr-sample/data-bin ] || bash data-prep/prepare-bible-sample.sh
rm -rf .devdata .whl
mkdir -p .devdata/bible-en-fr-sample .whl
cp -r data/bible-en-fr-sample/data-bin .devdata/bible-en-fr-sample/
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
normal() { tr 'A-Z_' 'a-z-'; }
"$py" -m pip freeze --exclude-editable | grep '==' | normal | grep -v -E "$skip" > "$work/wanted"
if [ -n "${IMAGE_PACKAGES:-}" ]; then
  cut -d= -f1 "$IMAGE_PACKAGES" | normal | sort -u > "$work/image"
  awk -F'==' 'NR == FNR { have[$1] = 1; next } !($1 in have)' "$work/image" "$work/wanted" \
    > "$work/left" && mv "$work/left" "$work/wanted"
fi
# One at a time: a package with no wheel for the machine (a pure-Python sdist such as
# antlr4-python3-runtime 4.9.3) is built into one here.
while read -r requirement; do
  "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux_2_28_x86_64 --platform any -d .whl "$requirement" >/dev/null 2>&1 \
    || "$py" -m pip wheel -q --no-deps -w .whl "$requirement" \
    || { echo "device_carry: no wheel for $requirement" >&2; exit 1; }
done < "$work/wanted"
if ls .whl/*-cp311-* >/dev/null 2>&1; then
  echo "device_carry: built for this machine's Python only: $(ls .whl/*-cp311-*)" >&2; exit 1
fi
"$py" -m pip wheel -q --no-deps --no-build-isolation -w .whl .
du -sh .whl .devdata
size=$(du -scm .whl .devdata | tail -1 | cut -f1)
[ "$size" -le 64 ] || echo "device_carry: ${size} MiB, over the carry's 64: give IMAGE_PACKAGES" \
  "(the image's pip list) so that what the image has stays out" >&2
