#!/usr/bin/env bash
# The one device runner: on a lent GPU machine, from the repo root, with .whl carried (made here by
# bench/lib/device_carry.sh), it installs the project from the wheels (bench/lib/device_setup.sh; not with
# DRY_RUN=1 or SETUP=0), then runs either the figure steps (STEPS) or a job list (JOBS), before
# DEADLINE seconds, packing what it has into $OUT every 15 s so that what finished comes back when
# the call is cut off (DEADLINE must end inside the device time left after the machine's start).
#
#   DEADLINE=400 STEPS=account bash bench/lib/device.sh                 # carry .whl .devdata
#   DEADLINE=500 JOBS=bench/jobs/parser-trees-gpu.tsv SLOTS=16 bash bench/lib/device.sh
#   STAGE=FOLDER bash bench/lib/device.sh    # only copy FOLDER/ckpt/. into /tmp/ck (never overwriting):
#                                        # checkpoints too large for one call's carry, call by call
#
# Job list (JOBS): bench/lib/parallel_jobs.py runs its NAME<TAB>COMMAND lines SLOTS at a time (default
# 16); the commands write under res/ (RESULTS), packed into $OUT/res.tgz without the *.pt files,
# each of which (at most 16 MiB) comes back on its own as $OUT/NAME.pt, as last written (a run cut
# off can be resumed elsewhere); the driver's log and JSON are res/driver.log and res/jobs.json.
# STAGE may come with JOBS (staged first).
#
# Figure steps (STEPS): tree2seq at the paper's IWSLT size (tree2seq_iwslt_de_en against
# fairseq's transformer_iwslt_de_en on the leaves, configs/iwslt13-en-fr.yaml) on the quickstart's
# data, and the quickstart's own trained models. Give each device call one step (STEPS="account",
# then STEPS="e2e-4096", ...): a call that runs several loses the last ones to its deadline. The
# steps, in the order of STEPS (default: all but gpu-tests, in this order):
#   gpu-tests    the tests that differ on a GPU (half precision, resume, two processes sharing
#                the GPU, torchrun, fairseq-tree-train's resume), one xdist worker each
#   account      one update of both models operator by operator, with torch.profiler's CUDA
#                kernel time of each operator, --fp16 and float32 (bench/operator_account.py)
#   half         the encoders' error in fp16, bf16 and amp against float32 on the same weights
#                (bench/half_precision.py)
#   e2e-4096     fairseq-train's own time per update and target tokens a second, --fp16,
#                --max-tokens 4096, 50 warm-up updates then 300 (bench/train_end_to_end.py,
#                E2E_REPEATS runs a model, default 2)
#   e2e-8192     the same at --max-tokens 8192, one run a model
#   fp32         the commands of e2e-4096 in float32, one run a model: fp16's losses against them
#   checkpoints  the quickstart's two models trained and scored (bench/lib/compare.py), unless
#                QUICKSTART_CHECKPOINTS names a folder that holds them (tree2seq/ and
#                transformer/, each with checkpoint_last.pt)
#   generation   those trained models, beam 5, batch sizes 1, 32 and 128 (bench/generation.py)
#   sweep        the largest --max-tokens one update fits in, each model (bench/training.py)
#   profile      torch.profiler's operators of a few --fp16 updates of both models
#                (bench/training.py --profile)
#   floors       the FLOP floors of the timed batches (train_end_to_end.py --floor-of), which
#                can as well be counted afterwards on any machine
# Each step writes into $RESULTS (default /tmp/gpu-figures), packed into $OUT every 15 s, so what
# finished comes back when the call is cut off; a step is stopped, with every process it
# started, when its share of the time left runs out, or its seconds in LIMITS ("e2e-4096=110
# generation=75": for a call whose time is counted). The steps read the
# quickstart's prepared data (DATA, default .devdata: DATA/bible-en-fr-sample/data-bin).
# bench/gpu_figures.py makes the tables of RESULTS from what comes back. DRY_RUN=1 runs every
# step on the CPU at toy sizes (tests/test_bench.py), to check the plumbing before a device call.
set -u
export PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
root=$(cd "$(dirname "$0")/../.." && pwd)
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"  # python -m bench.NAME from any folder
PY=${PYTHON:-python3}
cd "$root" || exit 1
if [ "${DRY_RUN:-0}" != 1 ] && [ "${SETUP:-1}" = 1 ]; then
  bash bench/lib/device_setup.sh || exit 1
fi
for folder in ${STAGE:-}; do  # checkpoints carried call by call, gathered outside the tree
  [ -d "$folder/ckpt" ] || { echo "device.sh: $folder/ckpt missing (carry it)" >&2; exit 1; }
  mkdir -p /tmp/ck && cp -r -n "$folder"/ckpt/. /tmp/ck/ && find /tmp/ck -name '*.pt' | sort
done
[ -n "${STAGE:-}" ] && [ -z "${JOBS:-}" ] && exit 0
data=${DATA:-$root/.devdata}
data_bin=$data/bible-en-fr-sample/data-bin
if [ -n "${JOBS:-}" ]; then res=${RESULTS:-$root/res}; else res=${RESULTS:-/tmp/gpu-figures}; fi
out=${OUT:-$res.out}
checkpoints=${QUICKSTART_CHECKPOINTS:-$res.checkpoints/bible-en-fr-sample}  # never packed
mkdir -p "$res" "$out"
deadline=$(( SECONDS + ${DEADLINE:-520} ))
left() { echo $(( deadline - SECONDS )); }
pack() {
  if [ -n "${JOBS:-}" ]; then  # a job list's checkpoints come back one file each
    find "$res" -name '*.pt' -size -16M | while read -r pt; do
      name=${pt#"$res"/}; name=${name//\//.}
      # a checkpoint written again (checkpoint_last.pt) comes back as its latest
      [ "$pt" -nt "$out/$name" ] && cp "$pt" "$out/$name.part" && mv "$out/$name.part" "$out/$name"
    done
    tar czf "$out/res.tgz.part" --exclude='*.pt' -C "$(dirname "$res")" "$(basename "$res")" \
      && mv "$out/res.tgz.part" "$out/res.tgz"
  else
    tar czf "$out/gpu-figures.tgz.part" -C "$(dirname "$res")" "$(basename "$res")" \
      && mv "$out/gpu-figures.tgz.part" "$out/gpu-figures.tgz"
  fi
}
( while sleep 15; do pack; done ) > /dev/null 2>&1 &  # not on our output: a caller reads to its end
packer=$!
trap 'kill $packer 2>/dev/null; pack' EXIT

if [ "${DRY_RUN:-0}" = 1 ]; then
  device=cpu; updates=6; warmup=2; every=2; small=512; large=1024; sweep="256 512"; fp16=
  toy="--encoder-layers 1 --decoder-layers 1 --encoder-embed-dim 32 --decoder-embed-dim 32"
  toy="$toy --encoder-ffn-embed-dim 64 --decoder-ffn-embed-dim 64 --num-workers 0"
  batches="1 4"; max_batches=2; generation="--length 4"
  quickstart="--generate-arg=--max-len-b=3 -- --max-update 4"; precisions=float32
else
  device=cuda; updates=350; warmup=50; every=25; small=4096; large=8192; fp16=--fp16; toy=
  sweep="4096 8192 16384 32768 65536 131072 262144"; batches="1 32 128"; max_batches=30
  generation=; quickstart=; precisions="fp16 float32"
fi
{ nvidia-smi 2>&1; $PY -c 'import sys, torch; print(sys.version, torch.__version__, torch.version.cuda)'
  uptime; } > "$res/machine.txt" 2>&1

if [ -n "${JOBS:-}" ]; then
  $PY -m bench.lib.parallel_jobs "$JOBS" --slots "${SLOTS:-16}" --deadline "$(left)" \
    --min-seconds "${MIN_SECONDS:-40}" --logs "$res/logs" --json "$res/jobs.json" \
    > "$res/driver.log" 2>&1
  status=$?
  uptime >> "$res/machine.txt"
  tail -5 "$res/driver.log"
  exit $status
fi

step() {  # NAME SHARE-OF-TIME-LEFT COMMAND...: the command in a process group of its own, which
  # is ended (TERM, then KILL) at its share of the time left (or at the seconds LIMITS gives
  # it, "NAME=SECONDS ..."), background jobs included
  local name=$1 share=$2; shift 2
  local limit=$(( $(left) * share / 100 )) t0=$SECONDS fixed
  for fixed in ${LIMITS:-}; do
    [ "${fixed%%=*}" = "$name" ] && limit=$(( ${fixed#*=} < $(left) ? ${fixed#*=} : $(left) ))
  done
  if [ "$limit" -lt 20 ]; then echo "$name: no time left" >> "$res/steps.txt"; return 1; fi
  echo "$name: started at $SECONDS s, load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$res/steps.txt"
  setsid bash -c '"$@"' "$name" "$@" > "$res/$name.log" 2>&1 &
  local group=$!
  ( sleep "$limit"; kill -TERM -- "-$group"; sleep 5; kill -KILL -- "-$group" ) > /dev/null 2>&1 &
  local watchdog=$!
  wait "$group"
  local status=$?
  kill "$watchdog" 2>/dev/null
  kill -KILL -- "-$group" 2>/dev/null
  echo "$name: exit $status after $(( SECONDS - t0 )) s (limit $limit s)" >> "$res/steps.txt"
  return $status
}
e2e() {  # PRECISION MAX-TOKENS REPEATS: bench/train_end_to_end.py at IWSLT size, no floor
  local flags=$toy; [ "$1" = fp16 ] && flags="$fp16 $toy"
  $PY -m bench.train_end_to_end --device $device --config iwslt13-en-fr --data "$data_bin" \
    --updates $updates --warmup $warmup --log-every $every --repeats "$3" --no-floor \
    --train-args="$flags --max-tokens $2" --json "$res/e2e-$1-$2.json"
}
quickstart_models() {  # the quickstart's two models, trained and scored, into $checkpoints
  $PY -m bench.lib.compare bible-en-fr-sample tree2seq transformer --data "$data" \
    --checkpoints "$(dirname "$checkpoints")" --json "$res/quickstart.json" $quickstart
}
generate() {
  $PY -m bench.generation --device $device --data "$data_bin" \
    --checkpoints "$checkpoints/tree2seq/checkpoint_last.pt" \
    "$checkpoints/transformer/checkpoint_last.pt" --batch-sizes $batches \
    --max-batches $max_batches --repeats 2 $generation --json "$res/generation.json"
}
memory_sweep() {
  $PY -m bench.training --device $device --config iwslt13-en-fr --data "$data_bin" \
    --train-args="$fp16 $toy" --max-tokens-sweep $sweep --json "$res/sweep.json"
}
operator_profile() {
  $PY -m bench.training --device $device --config iwslt13-en-fr --data "$data_bin" \
    --train-args="$fp16 $toy --max-tokens $small" --batches 6 --rounds 2 --profile \
    --profile-rows 30 --json "$res/profile-fp16.json"
}
floor_of() { $PY -m bench.train_end_to_end --floor-of "$1" --json "${1%.json}-floor.json"; }
account() {
  $PY -m bench.operator_account --device $device --data "$data_bin" --sizes iwslt \
    --precisions $precisions --train-args="$toy --max-tokens $small" --kernel-times \
    --json "$res/account.json"
}
gpu_tests() {  # one xdist worker a test: each builds its own example data (~85 s on an H100)
  local t=tests/test_tree2seq_training.py
  FAIRSEQ_TREE_SKIP_LINK_GRAMMAR=1 $PY -m pytest -p no:cacheprovider -v -rfEs -n "${TEST_WORKERS:-14}" \
    "$t::test_half_precision_trains_on_gpu" "$t::test_resumed_training_continues_exactly" \
    "$t::test_two_process_data_parallel_matches_update_freq" \
    "$t::test_torchrun_one_process_on_the_gpu_is_plain_training" tests/test_train_resume.py
}
half_error() {
  $PY -m bench.half_precision --device $device --data "$data_bin" \
    --train-args="$toy" --json "$res/half-precision.json"
}
export -f gpu_tests e2e quickstart_models generate memory_sweep operator_profile floor_of account half_error
export PY root device data data_bin res checkpoints updates warmup every small quickstart fp16 \
  toy batches max_batches generation sweep precisions

for name in ${STEPS:-account e2e-4096 fp32 checkpoints generation half e2e-8192 sweep profile floors}; do
  case $name in
    gpu-tests) step gpu-tests 80 gpu_tests ;;
    account) step account 60 account ;;
    half) step half 60 half_error ;;
    e2e-4096) step e2e-4096 25 e2e fp16 $small "${E2E_REPEATS:-2}" ;;
    e2e-8192) step e2e-8192 30 e2e fp16 $large 1 ;;
    fp32) step fp32 30 e2e fp32 $small 1 ;;
    checkpoints) [ -f "$checkpoints/transformer/checkpoint_last.pt" ] \
        || step checkpoints 40 quickstart_models ;;
    generation) [ -f "$checkpoints/transformer/checkpoint_last.pt" ] \
        && step generation 50 generate ;;
    sweep) step sweep 50 memory_sweep ;;
    profile) step profile 70 operator_profile ;;
    floors) for n in $small $large; do
        [ -f "$res/e2e-fp16-$n.json" ] && step floor-$n 90 floor_of "$res/e2e-fp16-$n.json"
      done ;;
    *) echo "device.sh: unknown step $name" >&2; exit 2 ;;
  esac
done
uptime >> "$res/machine.txt"
exit 0
