# issue 28 on the lent GPU (device tool, carry .whl and devdata; see bench/jobs/make-devdata.sh):
#   bash bench/device_setup.sh && bash bench/jobs/run-issue28-gpu.sh
set -u
export PYTHONUNBUFFERED=1
mkdir -p res/bible res/rt res/rt-patience res/keep
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > res/gpu.txt
python3 bench/parallel_jobs.py bench/jobs/issue28-gpu.tsv --slots 16 --deadline ${DEADLINE:-540} \
  --min-seconds 40 --logs res/logs --json res/jobs.json > res/driver.log 2>&1
cp res/jobs.json res/driver.log $OUT/
tar czf $OUT/res.tgz res
tail -5 res/driver.log
python3 - <<'PY'
import json; r = json.load(open("res/jobs.json"))
print("finished", len(r["finished"]), "failed", [f["name"] for f in r["finished"] if f["returncode"]],
      "stopped", r["stopped_or_running"], "not started", len(r["not_started"]))
PY
