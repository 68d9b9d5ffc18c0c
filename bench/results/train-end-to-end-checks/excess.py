"""operators-excess.json from the files beside it: the profiled operators of each model
(operators-*.json), the floor of train-end-to-end-cpu.json, and the FLOPs by operator of
flops_by_op.py (20 batches). Run from the repository root."""
import json
import sys

sys.path.insert(0, "bench")
import train_end_to_end as e2e  # noqa: E402

d = "bench/results/train-end-to-end-checks/"
floor = json.load(open("bench/results/train-end-to-end-cpu.json"))["floor"]["ratio"]
tables = {m: json.load(open(d + f"operators-{m}.json")) for m in e2e.MODELS}
flops = json.load(open(d + "flops-by-operator.json"))
products = {"mm": ["aten::mm"], "addmm": ["aten::addmm", "aten::addmv_"],
            "attention": ["aten::bmm", "aten::baddbmm",
                          "aten::_scaled_dot_product_flash_attention_for_cpu",
                          "aten::_scaled_dot_product_flash_attention_for_cpu_backward"]}
flop_keys = {"mm": ["mm"], "addmm": ["addmm"], "attention": ["bmm", "baddbmm"]}
rows = {}
for group, ops in products.items():
    ms = {m: sum(tables[m]["operators"].get(o, {}).get("self_ms", 0) for o in ops)
          for m in e2e.MODELS}
    gf = {m: sum(flops[m].get(k, 0) for k in flop_keys[group]) / 1e9 / 20 for m in e2e.MODELS}
    rows[group] = {"operators": ops, "ms_per_update": ms, "gflop_per_update": gf,
                   "time_ratio": ms["tree2seq"] / ms["transformer"],
                   "flop_ratio": gf["tree2seq"] / gf["transformer"],
                   "gflop_per_second": {m: gf[m] / ms[m] * 1000 for m in e2e.MODELS}}
operator_ms = {m: {op: r["self_ms"] for op, r in t["operators"].items()} for m, t in tables.items()}
report = {"what": "torch.profiler over updates 40-100 of one fairseq-tree-train run a model "
                  "(prof.sh), each operator's excess over the floor of train-end-to-end-cpu.json; "
                  "matrix products' time beside their FLOPs (flops_by_op.py: every third batch of "
                  "updates 40-100, 20 batches)",
          "floor": floor, "self_ms_per_update": {m: tables[m]["self_ms_per_update"]
                                                 for m in e2e.MODELS},
          "excess_total_ms": tables["tree2seq"]["self_ms_per_update"]
          - floor * tables["transformer"]["self_ms_per_update"],
          "products": rows, "excess": e2e.excesses(operator_ms, floor)[:30]}
json.dump(report, open(d + "operators-excess.json", "w"), indent=1)
