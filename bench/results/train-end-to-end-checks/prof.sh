cd /work/main
for name in tree2seq transformer; do
  cmd=$(python3 -c "import json,sys; print(json.load(open('/tmp/e2e/before.json'))['commands']['$name'])")
  eval "set -- $cmd"; shift
  .venv/bin/python bench/profiled_train.py --from-update 40 --to-update 100 --json /tmp/e2e/nostack-$name.json -- "$@" --max-update 100 > /tmp/e2e/nostack-$name.log 2>&1
done
