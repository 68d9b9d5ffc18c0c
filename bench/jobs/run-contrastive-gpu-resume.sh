# The contrastive benchmark on a lent GPU (issue 45): the four runs of bench/jobs/contrastive-gpu-resume.tsv, resumed from their CPU
# checkpoints. The checkpoints (26 MB each) do not fit one call's 64 MiB, so calls in a row, each
# inside the 30 s the machine stays warm, carry them (made here by bash bench/jobs/make-devdata-contrastive.sh).
# A carried folder is removed there by the next call that does not carry it (the warm machine keeps
# only what lies outside the repository: the install, /tmp), so each call stages its folder's
# checkpoints into /tmp/ck, and the training call carries devc45c, which holds the data:
#   1. carry .whl devc45a:  bash bench/device_setup.sh && bash bench/jobs/run-contrastive-gpu-resume.sh stage devc45a
#   2. carry devc45b:       bash bench/jobs/run-contrastive-gpu-resume.sh stage devc45b
#   3. carry devc45c:       bash bench/jobs/run-contrastive-gpu-resume.sh stage devc45c && DEADLINE=SECONDS bash bench/jobs/run-contrastive-gpu-resume.sh
# Staging never overwrites a checkpoint already in /tmp/ck, so a further call (carry devc45c, same
# two commands) resumes the runs stopped at the last deadline from where they were, not from the
# CPU's. DEADLINE must end inside the device time left after the call starts. Every 20 s, what has
# finished comes back in $OUT: res.tgz (logs, JSONs, translations, each run's patience.jsonl and
# train.log) and, for a finished run, its best checkpoint without the optimizer state
# (NAME.best.pt, 14.8 MB; 16 MiB a file). A run stopped at the deadline comes back as logs only:
# its checkpoint_last.pt is too large. res/ is not ignored, so the next call's tree removes it.
set -u
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=3
mkdir -p /tmp/ck
if [ "${1:-}" = stage ]; then
  [ -d "${2:-}/ckpt" ] || { echo "run-contrastive-gpu-resume: ${2:-FOLDER}/ckpt missing (carry it)" >&2; exit 1; }
  cp -r -n "$2"/ckpt/. /tmp/ck/ && find /tmp/ck -name checkpoint_last.pt | sort
  exit
fi
runs=$(ls -d /tmp/ck/seed-*/bible-en-fr-contrastive/* 2>/dev/null | wc -l)
[ "$runs" = 4 ] || { echo "run-contrastive-gpu-resume: $runs of 4 runs staged in /tmp/ck" >&2; exit 1; }
[ -d devc45c/data ] || { echo "run-contrastive-gpu-resume: devc45c/data missing (carry devc45c)" >&2; exit 1; }
mkdir -p res/json res/keep res/logs res/runs
for run in /tmp/ck/seed-*/bible-en-fr-contrastive/*; do
  [ -e $run/checkpoint_best.pt ] || cp $run/checkpoint_last.pt $run/checkpoint_best.pt
done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > res/gpu.txt
python3 -m bench.parallel_jobs bench/jobs/contrastive-gpu-resume.tsv --slots 4 --deadline ${DEADLINE:-400} \
  --min-seconds 40 --logs res/logs --json res/jobs.json > res/driver.log 2>&1 &
driver=$!
pack() {
  for run in /tmp/ck/seed-*/bible-en-fr-contrastive/*; do
    seed=$(basename $(dirname $(dirname $run))) model=$(basename $run)
    name=bible-en-fr-contrastive.$model.s${seed#seed-}
    mkdir -p res/runs/$name
    cp $run/*.jsonl $run/*.log $run/*.json $run/*.txt res/runs/$name/ 2>/dev/null
    if [ -e res/json/$name.json ] && [ ! -e $OUT/$name.best.pt ]; then
      python3 -m fairseq_tree.cli.average --dir $run --last 1 --of best \
        --output $OUT/$name.best.pt > res/runs/$name/strip.log 2>&1
    fi
  done
  tar czf $OUT/res.tgz.part res && mv $OUT/res.tgz.part $OUT/res.tgz
}
while kill -0 $driver 2>/dev/null; do sleep 20; pack; done
pack
tail -8 res/driver.log
grep -h '"num_updates"' /tmp/ck/seed-*/*/*/patience.jsonl | tail -4
