import json, shlex, sys, time
sys.path.insert(0, "bench")
import train_end_to_end as e2e
from training import build_setup, collate, fresh, update
cmds = {k: shlex.split(v) for k, v in json.load(open("/tmp/e2e/before.json"))["commands"].items()}
setups = {n: build_setup(n, c[1:]) for n, c in cmds.items()}
order = e2e.trained_batches(setups["tree2seq"], 100)
warm, timed = order[:15], order[40:70]
for n, s in setups.items():
    for ids in warm:
        update(s, fresh(collate(s, list(ids))))
res = {}
for n, s in setups.items():
    col = [collate(s, list(ids)) for ids in timed]
    passes = []
    for p in range(3):
        t = time.perf_counter()
        for b in col:
            update(s, fresh(b))
        passes.append((time.perf_counter() - t) / len(col))
    res[n] = passes
    print(n, [round(1000 * x, 1) for x in passes], flush=True)
print("ratios", [round(a / b, 3) for a, b in zip(res["tree2seq"], res["transformer"])])
