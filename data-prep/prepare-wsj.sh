#!/usr/bin/env bash
# WSJ for the Tree Transformer's unsupervised parsing (Wang et al., EMNLP 2019), from a local copy
# of the Penn Treebank (licensed by the LDC: nothing is downloaded).
#
#   PTB_DIR=/corpora/treebank_3/parsed/mrg/wsj bash data-prep/prepare-wsj.sh   -> $DATA/wsj/
#
# Every wsj_SSNN.mrg under PTB_DIR is read (sections 00-24). The words of each sentence are
# those of the On-LSTM protocol the paper follows (leaves with a PTB word tag: no punctuation,
# -NONE- or $ #), lowercased, digit runs -> N. WSJ-train: every section but 22 and 23 (WSJ_ALL=1:
# all of them, the paper's WSJ-all); valid: 22; WSJ-test: 23 (2,416 sentences); WSJ-10: the
# sentences of at most 10 words of every section (7,422). Gold trees of WSJ-test and WSJ-10 over
# those words; subword-nmt codes learned on the training text (WSJ_BPE_MERGES, default 16000);
# one unit per word (its first piece); stock fairseq-preprocess --only-source. See
# data-prep/wsj.py for the layout of $DATA/wsj/.
#
# Environment: PTB_DIR (required), DATA (default data), WSJ_ALL, WSJ_BPE_MERGES, WORKERS,
# FAIRSEQ_TREE_VENV (see data-prep/common.sh).
set -euo pipefail
data_prep=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$data_prep")
venv=${FAIRSEQ_TREE_VENV:-$repo/.venv}
if [[ -x $venv/bin/python ]]; then export PATH="$venv/bin:$PATH"; fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
if [[ -z ${PTB_DIR:-} ]]; then
  echo "prepare-wsj.sh: set PTB_DIR to the Penn Treebank's WSJ .mrg folder (parsed/mrg/wsj)" >&2
  exit 2
fi
data=${DATA:-data}
[[ $data == /* ]] || data=$repo/$data
python "$data_prep/wsj.py" --ptb-dir "$PTB_DIR" --data "$data" \
  --bpe-merges "${WSJ_BPE_MERGES:-16000}" --workers "${WORKERS:-$(nproc)}" \
  ${WSJ_ALL:+$([[ $WSJ_ALL == 1 ]] && echo --wsj-all)}
