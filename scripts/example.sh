#!/usr/bin/env bash
# A small example end to end on the real parsed sample in tests/data/bible (English trees ->
# French): learn joint BPE on tree leaves + target text, apply it, binarize, train a tiny tree2seq
# model for a few hundred updates on CPU, and translate the test set with beam search.
# About a minute on 2 cores; 300 training pairs are far too few for useful translations.
#
# Usage: bash scripts/example.sh [WORKDIR]     (default: ./runs/example; MAX_UPDATE=200)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${FAIRSEQ_TREE_VENV:-$root/.venv}
export PATH="$venv/bin:$PATH" OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
work=${1:-$root/runs/example}
sample=$root/tests/data/bible
mkdir -p "$work/bpe"

echo "== learn joint BPE on English tree leaves + French text"
fairseq-tree-bpe learn --method subword-nmt --symbols 2000 \
  --trees "$sample/train.en" --text "$sample/train.fr" --output "$work/bpe/codes"
for split in train valid test; do
  fairseq-tree-bpe apply --codes "$work/bpe/codes" --input "$sample/$split.en" --output "$work/bpe/$split.en"
  fairseq-tree-bpe apply --codes "$work/bpe/codes" --text --input "$sample/$split.fr" --output "$work/bpe/$split.fr"
done

echo "== binarize"
fairseq-tree-preprocess --source-lang en --target-lang fr --joined-dictionary --workers 2 \
  --trainpref "$work/bpe/train" --validpref "$work/bpe/valid" --testpref "$work/bpe/test" \
  --destdir "$work/data-bin"

echo "== train a tiny tree2seq model"
fairseq-train "$work/data-bin" --user-dir "$root/fairseq_tree" \
  --task tree_translation --arch tree2seq_tiny --share-all-embeddings \
  --optimizer adam --lr 3e-3 --lr-scheduler inverse_sqrt --warmup-updates 20 \
  --criterion label_smoothed_cross_entropy --label-smoothing 0.1 \
  --max-tokens 2048 --max-update "${MAX_UPDATE:-200}" --seed 1 --num-workers 0 \
  --save-dir "$work/checkpoints" --no-epoch-checkpoints \
  --log-format simple --log-interval 10

echo "== generate"
fairseq-generate "$work/data-bin" --user-dir "$root/fairseq_tree" --task tree_translation \
  --path "$work/checkpoints/checkpoint_last.pt" --gen-subset test \
  --beam 5 --batch-size 32 --remove-bpe --num-workers 0 > "$work/generate-test.txt"
tail -n 1 "$work/generate-test.txt"
