#!/usr/bin/env bash
# Installs fairseq-fixed, its and our runtime dependencies that the GPU machine's image lacks, and
# fairseq_tree itself into that machine's own Python (python3, /opt/torch/.venv), without the network,
# then checks the install in a few seconds. Run from the repo root there, in a `run` call that names
# .whl in carry:   bash bench/lib/device_setup.sh || exit   (bench/lib/device.sh runs it first)
# .whl/ (ignored via .git/info/exclude) holds cp312 manylinux x86_64 / py3 wheels; torch, numpy and
# everything the image already has are not in it. fairseq_tree is installed editable from this tree,
# so edits made after .whl/fairseq_tree-*.whl was built are used; that wheel is the fallback.
# --ignore-requires-python: pyproject.toml says <3.12, the machine has 3.12. Sets no variables for
# the caller. DEVICE_SETUP_ALLOW_CPU=1 lets the check pass without a GPU (a local dry run).
set -u
cd "$(dirname "$0")/../.." || exit 1
PY=${PYTHON:-python3}
LOG=/tmp/device_setup.log
die() { echo "device_setup: FAILED: $*" >&2; exit 1; }
pipi() {
  PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 "$PY" -m pip install -q --no-index \
    --no-deps --no-compile --no-cache-dir --ignore-requires-python "$@" >>"$LOG" 2>&1
}
: >"$LOG"
deps=$(ls .whl/*.whl 2>/dev/null | grep -v '/fairseq_tree-')
[ -n "$deps" ] || die "no wheels in .whl/ (name .whl in the run call's carry)"
pipi $deps || { cat "$LOG" >&2; die "pip install of .whl/*.whl"; }
how=editable
pipi --no-build-isolation -e . || { how=wheel; pipi .whl/fairseq_tree-*.whl; } \
  || { cat "$LOG" >&2; die "install of fairseq_tree (editable and wheel)"; }

BIN=$("$PY" -c 'import sysconfig; print(sysconfig.get_path("scripts"))') || die "$PY does not run"
for s in fairseq-train fairseq-generate fairseq-validate fairseq-tree-parse fairseq-tree-preprocess; do
  [ -x "$BIN/$s" ] || die "console script $s not in $BIN"
done
versions=$(cd /tmp && "$PY" -W ignore -c '
import os, sys, torch, numpy, fairseq, fairseq_tree, hydra, omegaconf
from fairseq.data import data_utils_fast, token_block_utils_fast
from fairseq import libbleu
cuda = torch.cuda.is_available()
if not cuda and os.environ.get("DEVICE_SETUP_ALLOW_CPU") != "1":
    sys.exit("torch.cuda.is_available() is False")
gpu = torch.cuda.get_device_name(0) if cuda else "no GPU"
print(f"python {sys.version.split()[0]}, torch {torch.__version__} (cuda {torch.version.cuda}, {gpu}),"
      f" numpy {numpy.__version__}, fairseq {fairseq.__version__}, hydra {hydra.__version__},"
      f" omegaconf {omegaconf.__version__}, fairseq_tree from {os.path.dirname(fairseq_tree.__file__)}")
' 2>>"$LOG") || { tail -5 "$LOG" >&2; die "import check (torch, fairseq, fairseq_tree, fairseq.data.data_utils_fast)"; }
"$BIN/fairseq-train" --help >/dev/null 2>>"$LOG" || { tail -5 "$LOG" >&2; die "fairseq-train --help"; }
[ "$(command -v fairseq-train)" = "$BIN/fairseq-train" ] || echo "device_setup: note: $BIN is not first on PATH" >&2
echo "device_setup: ok ($how): $versions"
