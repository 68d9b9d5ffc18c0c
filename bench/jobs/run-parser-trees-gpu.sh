# The classification runs on parser trees on a lent GPU (issue 28) (device tool, carry .whl and devdata; see bench/jobs/make-devdata.sh):
#   bash bench/device_setup.sh && DEADLINE=SECONDS bash bench/jobs/run-parser-trees-gpu.sh
# DEADLINE must end well inside the call's real limit, which is the device time left after the
# machine's start, not timeout_s: the first call (2026-11-26) ran under 551 s, not the 600 asked,
# and was killed before its one tar at the end, so nothing came back. Hence the tar of res/ into
# $OUT every 20 s: whatever has finished comes back even when the call is killed.
set -u
export PYTHONUNBUFFERED=1
mkdir -p res/bible res/rt res/rt-patience res/keep
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > res/gpu.txt
python3 -m bench.parallel_jobs bench/jobs/parser-trees-gpu.tsv --slots 16 --deadline ${DEADLINE:-400} \
  --min-seconds 40 --logs res/logs --json res/jobs.json > res/driver.log 2>&1 &
driver=$!
while kill -0 $driver 2>/dev/null; do
  sleep 20
  tar czf $OUT/res.tgz.part res && mv $OUT/res.tgz.part $OUT/res.tgz
done
tar czf $OUT/res.tgz.part res && mv $OUT/res.tgz.part $OUT/res.tgz
tail -5 res/driver.log
