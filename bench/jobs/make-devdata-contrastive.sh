# Split what bench/jobs/contrastive-gpu-resume.tsv needs into three folders (ignored through
# .git/info/exclude), each small enough to travel with the working tree in one device call
# (64 MiB with the tree and .whl): devc45a, devc45b, devc45c, carried by three calls in a row on
# the warm machine (bench/jobs/run-contrastive-gpu-resume.sh says how). A run's checkpoint_last.pt (26 MB
# with its optimizer state), patience.jsonl and train.log travel; checkpoint_best.pt only where it
# differs from checkpoint_last.pt, without the optimizer state (fairseq_tree.cli.average --last 1).
set -euo pipefail
src=${CKPT:-runs/c45/ckpt} data=${DATA:-runs/c45}/bible-en-fr-sample
rm -rf devc45a devc45b devc45c
put() {  # FOLDER SEED MODEL [FOLDER_OF_BEST]
  local run=seed-$2/bible-en-fr-contrastive/$3
  local from=$src/$run to=$1/ckpt/$run best=${4:-$1}/ckpt/$run
  mkdir -p "$to" "$best"
  cp "$from"/checkpoint_last.pt "$from"/patience.jsonl "$from"/train.log "$to"/
  if ! cmp -s "$from"/checkpoint_last.pt "$from"/checkpoint_best.pt; then
    .venv/bin/python -m fairseq_tree.cli.average --dir "$from" --last 1 --of best \
      --output "$best"/checkpoint_best.pt
  fi
}
put devc45a 2 transformer devc45c
put devc45b 3 transformer
put devc45b 2 transformer-linearized
put devc45c 3 transformer-linearized
mkdir -p devc45c/data/bible-en-fr-sample/tok
cp -r "$data"/data-bin "$data"/ref "$data"/recipe.json devc45c/data/bible-en-fr-sample/
cp "$data"/tok/test.* devc45c/data/bible-en-fr-sample/tok/
du -sh devc45a devc45b devc45c
