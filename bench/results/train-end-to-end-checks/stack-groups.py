"""stack-backward-groups.json from stack-backward-*.json (prof-stack-backward.sh and
prof-stack-token-matched.sh: torch.profiler with --with-stack, updates 30-70, each backward
operator counted with the file of the forward operator it differentiates): self ms per update of
the three models by part of the model, forward and backward together; tree2seq's excess over
the floor times the Transformer's, and its ratio to the Transformer on N + M source tokens.
Run from the repository root."""
import json

d = "bench/results/train-end-to-end-checks/"
floor = json.load(open("bench/results/train-end-to-end-cpu.json"))["floor"]["ratio"]
models = ("tree2seq", "transformer", "transformer_n_plus_m")
files = {m: json.load(open(d + f"stack-backward-{m}.json"))["files"] for m in models}
PARTS = {
    # tree2seq: tree self- and cross-attention, and fairseq's for the decoder's self-attention
    "attention": ("fairseq_tree/modules/", "fairseq/modules/multihead_attention.py"),
    "fairseq's layers (FFN, LayerNorm, residuals)": ("fairseq/modules/transformer_layer.py",),
    "fairseq's dropout": ("fairseq/modules/fairseq_dropout.py",),
    "identical in both: output layer, loss, optimizer": (
        "fairseq/models/transformer/transformer_decoder.py", "fairseq/criterions/",
        "fairseq/optim/", "fairseq/utils.py"),
}


def part(name: str) -> str:
    path = name.removeprefix("backward: ")
    for title, prefixes in PARTS.items():
        if path.startswith(prefixes):
            return title
    return "other"


groups = {}
for m in models:
    for name, ms in files[m].items():
        row = groups.setdefault(part(name), {x: 0.0 for x in models})
        row[m] += ms
rows = []
for title, ms in groups.items():
    t, p, n = ms["tree2seq"], ms["transformer"], ms["transformer_n_plus_m"]
    rows.append({"part": title, "tree2seq_ms": round(t, 1), "transformer_ms": round(p, 1),
                 "transformer_n_plus_m_ms": round(n, 1), "ratio": round(t / p, 3) if p else None,
                 "excess_over_floor_ms": round(t - floor * p, 1),
                 "ratio_to_n_plus_m": round(t / n, 3) if n else None,
                 "over_n_plus_m_ms": round(t - n, 1)})
rows.sort(key=lambda r: -r["excess_over_floor_ms"])
report = {"what": "self ms per update by part of the model, forward and backward (updates 30-70, "
                  "one profiled run a model, prof-stack-backward.sh, prof-stack-token-matched.sh)",
          "floor": floor, "total_ms": {m: round(sum(files[m].values()), 1) for m in models},
          "parts": rows}
json.dump(report, open(d + "stack-backward-groups.json", "w"), indent=1)
for r in rows:
    print(f"{r['part']:<50} {r['tree2seq_ms']:>7.1f} {r['transformer_ms']:>7.1f} "
          f"{r['transformer_n_plus_m_ms']:>7.1f} {r['ratio'] or 0:>6.3f} "
          f"{r['excess_over_floor_ms']:>+7.1f} {r['ratio_to_n_plus_m'] or 0:>6.3f} "
          f"{r['over_n_plus_m_ms']:>+7.1f}")
print("total", report["total_ms"])
