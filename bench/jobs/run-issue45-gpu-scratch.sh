# issue 45 on the lent GPU, second loan: bench/jobs/issue45-gpu-scratch.tsv from scratch, in two
# calls in a row on the warm machine (the first session's CPU checkpoints were lost with its
# machine, so nothing is carried but the data, made here by `bash bench/jobs/run-issue45-gpu-scratch.sh devdata`):
#   1. carry .whl devc45:  bash bench/jobs/run-issue45-gpu-scratch.sh start SECONDS
#   2. no carry:           bash bench/jobs/run-issue45-gpu-scratch.sh finish SECONDS
#   3. (if it says so) no carry:  bash bench/jobs/run-issue45-gpu-scratch.sh send
# `start` copies the tree and the data to /tmp (a later call's working tree replaces the
# repository's copy there), installs (bench/device_setup.sh), starts the driver with setsid so that
# it outlives the call, and watches it for SECONDS. `finish` watches it for SECONDS more, then
# SIGTERMs it (bench/parallel_jobs.py: the deadline brought forward) and sends back what a run
# needs to go on here: checkpoint_last.pt in parts of 15 MB (`cat NAME.last.pt.* >
# checkpoint_last.pt`) and, where it differs, checkpoint_best.pt without the optimizer state. A run
# that stopped early sends its best checkpoint without the optimizer state (NAME.best.pt). What
# does not fit one call's 8 files and 64 MiB waits in /tmp/send for a further call (`send`). Every
# 20 s, res.tgz in $OUT holds the logs, JSONs, translations, patience.jsonl and train.log so far.
set -u
repo=/tmp/repo tsv=bench/jobs/issue45-gpu-scratch.tsv
if [ "${1:-}" = devdata ]; then  # here: the data the runs need, small enough to carry
  rm -rf devc45 && mkdir -p devc45/data
  for pair in bible-en-fr-sample bible-en-fr-sample-spacy; do
    mkdir -p devc45/data/$pair/tok
    cp -r runs/c45/$pair/data-bin runs/c45/$pair/ref runs/c45/$pair/recipe.json devc45/data/$pair/
    cp runs/c45/$pair/tok/test.* devc45/data/$pair/tok/
  done
  du -sh devc45; exit
fi
export PYTHONUNBUFFERED=1
pack() {  # [final]
  for run in /tmp/ck/seed-*/*/*; do
    [ -d "$run" ] || continue
    seed=$(basename $(dirname $(dirname $run))) pair=$(basename $(dirname $run))
    name=$pair.$(basename $run).s${seed#seed-}
    mkdir -p res/runs/$name
    cp $run/*.jsonl $run/*.log $run/*.json res/runs/$name/ 2>/dev/null
    if [ -e res/json/$name.json ]; then
      [ -e $OUT/$name.best.pt ] || python3 -m fairseq_tree.cli.average --dir $run --last 1 \
        --of best --output $OUT/$name.best.pt > res/runs/$name/strip.log 2>&1
    elif [ "${1:-}" = final ] && [ -e $run/checkpoint_last.pt ]; then
      mkdir -p /tmp/send
      split -b 15000000 -d $run/checkpoint_last.pt /tmp/send/$name.last.pt.
      cmp -s $run/checkpoint_last.pt $run/checkpoint_best.pt || python3 -m fairseq_tree.cli.average \
        --dir $run --last 1 --of best --output /tmp/send/$name.best-so-far.pt > res/runs/$name/strip.log 2>&1
    fi
  done
  tar czf $OUT/res.tgz.part res && mv $OUT/res.tgz.part $OUT/res.tgz
}
send() {  # what fits of /tmp/send into $OUT (8 files, 64 MiB a call, res.tgz one of them)
  local files=$(ls $OUT | wc -l) bytes=$(du -cb $OUT/* 2>/dev/null | tail -1 | cut -f1)
  for f in $(ls /tmp/send 2>/dev/null); do
    size=$(stat -c %s /tmp/send/$f)
    [ $files -lt 8 ] && [ $((bytes + size)) -lt 66000000 ] || break
    mv /tmp/send/$f $OUT/ && files=$((files + 1)) bytes=$((bytes + size))
  done
  echo "left for another call (send): $(ls /tmp/send 2>/dev/null | wc -l) files"
}
watch() {  # SECONDS
  local until=$((SECONDS + $1))
  while [ $SECONDS -lt $until ] && pgrep -f bench/parallel_jobs.py > /dev/null; do sleep 20; pack; done
}
case "${1:-}" in
  start)
    [ -d devc45/data ] || { echo "run-issue45-gpu-scratch: devc45/data missing (carry devc45)" >&2; exit 1; }
    rm -rf $repo /tmp/d45 && mkdir -p $repo /tmp/ck && cp -r devc45/data /tmp/d45
    tar cf - --exclude=./devc45 --exclude=./.git --exclude=./.venv --exclude=./runs . | tar xf - -C $repo
    # REHEARSAL=1: here, with .venv/bin first on PATH, no install
    cd $repo && { [ -n "${REHEARSAL:-}" ] || bash bench/device_setup.sh; } || exit 1
    mkdir -p res/json res/keep res/logs res/runs
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > res/gpu.txt 2>&1
    setsid python3 bench/parallel_jobs.py $tsv --slots 3 --deadline 1500 --min-seconds 0 \
      --logs res/logs --json res/jobs.json > res/driver.log 2>&1 < /dev/null &
    sleep 5; watch $(( ${2:-500} - SECONDS )); pack ;;  # SECONDS: since the script began
  finish)
    cd $repo || exit 1
    watch ${2:-120}
    pkill -TERM -f bench/parallel_jobs.py
    while pgrep -f bench/parallel_jobs.py > /dev/null; do sleep 1; done
    pack final; send ;;
  send) cd $repo && tar czf $OUT/res.tgz res && send ;;
  *) echo "usage: run-issue45-gpu-scratch.sh devdata | start SECONDS | finish SECONDS | send" >&2; exit 2 ;;
esac
cat res/driver.log
for f in /tmp/ck/seed-*/*/*/patience.jsonl; do echo "$f: $(tail -1 $f)"; done
ls -la $OUT
