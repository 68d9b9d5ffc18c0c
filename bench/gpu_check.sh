#!/usr/bin/env bash
# The GPU path on a lent GPU machine (issue 31), in one device call, before DEADLINE seconds:
#   1. the tests only a GPU runs (--fp16, --memory-efficient-fp16, --amp, resume, data
#      parallel with 2 processes sharing the GPU, torchrun, fairseq-tree-train's resume);
#   2. bench/training.py, bench/generation.py and bench/accumulation.py on CUDA (JSON);
#   3. the rest of the suite on that machine's Python (3.12), for whatever time is left.
# Every phase writes into /tmp/gpu-check, which is tarred into $OUT every 15 s: what finished comes
# back even when the call is cut off at the session's device time (which the machine's start
# eats into, so DEADLINE must end well inside what is left after it). Run from the repo root:
#   bash bench/device_setup.sh && DEADLINE=420 bash bench/gpu_check.sh     (carry: .whl)
# A later call can run only some of it: PHASES (default "gpu-tests benches rest"; "suite" is the
# whole suite, GPU tests included), BENCHES (default "training generation accumulation") and
# GENERATION_ARGS (default "--repeats 1").
set -u
export PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore FAIRSEQ_TREE_SKIP_LINK_GRAMMAR=1
res=/tmp/gpu-check
mkdir -p "$res"
deadline=$(( SECONDS + ${DEADLINE:-420} ))
left() { echo $(( deadline - SECONDS )); }
pack() { tar czf "$OUT/gpu-check.tgz.part" -C /tmp gpu-check && mv "$OUT/gpu-check.tgz.part" "$OUT/gpu-check.tgz"; }
( while sleep 15; do pack; done ) &
packer=$!
trap 'kill $packer 2>/dev/null; pack' EXIT

{ nvidia-smi; python3 -c 'import sys, torch; print(sys.version, torch.__version__, torch.version.cuda)'; } \
  > "$res/machine.txt" 2>&1
pytest_run() {  # NAME SECONDS WORKERS PYTEST-ARGS...
  local name=$1 limit=$2 workers=$3; shift 3
  [ "$limit" -gt 20 ] || { echo "$name: no time left" >> "$res/phases.txt"; return; }
  local t0=$SECONDS
  timeout -k 5 "$limit" python3 -m pytest -p no:cacheprovider -v -rfEs -n "$workers" "$@" \
    > "$res/$name.log" 2>&1
  echo "$name: exit $? after $(( SECONDS - t0 )) s (limit $limit s)" >> "$res/phases.txt"
}
# The tests that differ on a GPU. Each xdist worker makes its own `example` fixture (about 85 s
# with 14 workers on the H100 machine), so they get one worker each: 14 tests in about 170 s there.
t=tests/test_tree2seq_training.py
gpu_tests="$t::test_half_precision_trains_on_gpu $t::test_resumed_training_continues_exactly
  $t::test_two_process_data_parallel_matches_update_freq
  $t::test_torchrun_one_process_on_the_gpu_is_plain_training tests/test_train_resume.py"
phases=" ${PHASES:-gpu-tests benches rest} "
[[ $phases == *" gpu-tests "* ]] && pytest_run gpu-tests $(( $(left) / 2 )) 14 $gpu_tests

[[ $phases == *" benches "* ]] && for bench in ${BENCHES:-training generation accumulation}; do
  limit=$(( $(left) / 4 ))
  [ "$limit" -gt 20 ] || { echo "bench $bench: no time left" >> "$res/phases.txt"; continue; }
  t0=$SECONDS
  extra=(); [ "$bench" = generation ] && extra=(${GENERATION_ARGS:---repeats 1})
  timeout -k 5 "$limit" python3 -m "bench.$bench" --device cuda "${extra[@]}" --json "$res/$bench-cuda.json" \
    > "$res/$bench.log" 2>&1
  echo "bench $bench: exit $? after $(( SECONDS - t0 )) s (limit $limit s)" >> "$res/phases.txt"
done

[[ $phases == *" suite "* ]] && pytest_run suite $(( $(left) - 10 )) 14 tests
[[ $phases == *" rest "* ]] && pytest_run rest-of-suite $(( $(left) - 10 )) 14 tests --deselect=tests/test_train_resume.py \
  $(for f in $gpu_tests; do case $f in *::*) printf -- '--deselect=%s ' "$f";; esac; done)
