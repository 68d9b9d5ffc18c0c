import json, shlex, sys
sys.path.insert(0, "bench")
import train_end_to_end as e2e
from training import build_setup, collate, update_flops
cmds = {k: shlex.split(v) for k, v in json.load(open("/tmp/e2e/before.json"))["commands"].items()}
setups = {n: build_setup(n, c[1:]) for n, c in cmds.items()}
batches = e2e.trained_batches(setups["tree2seq"], 100)[40:100:3]
out = {}
for n, s in setups.items():
    f = update_flops(s, [collate(s, list(ids)) for ids in batches])
    out[n] = f
    print(n, {k: round(v / 1e9 / len(batches), 2) for k, v in f.items()})
json.dump(out, open("/tmp/e2e/flops_by_op.json", "w"))
