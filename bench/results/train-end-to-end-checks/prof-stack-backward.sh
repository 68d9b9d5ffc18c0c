cd /work/main
for name in tree2seq transformer; do
  cmd=$(python3 -c "import json,sys; print(json.load(open('/tmp/e2e/before.json'))['commands']['$name'])")
  eval "set -- $cmd"; shift
  .venv/bin/python bench/profiled_train.py --from-update 30 --to-update 70 --with-stack --json /tmp/e2e/stack-backward-$name.json -- "$@" --max-update 70 > /tmp/e2e/stack-backward-$name.log 2>&1
done
