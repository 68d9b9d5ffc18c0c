"""Time and peak memory of hierarchical accumulation: ours, the dense reference that builds S,
and attention and whole encoder layers over the same n + m tokens. Forward + backward, as in
training.

    python -m bench.accumulation                      # n = 16 ... 256, m = 0.8 n, d 512, B 32
    python -m bench.accumulation --json bench/results/accumulation-cpu.json

Rows (each forward + backward, on random trees with m = round(0.8 n) nodes):
  ours        hierarchical_accumulation (Eq. 10), per batch plan included
  ours/layer  the per-layer part (``accumulate``) when the plan is shared by the layers
  dense       bench/lib/dense_reference.py, which materialises S (B x m x n x d) like the authors' code;
              run only for n <= --dense-max-n (default 128: at n = 256 S alone would be about
              13 GB), "-" in the table and null in the JSON above it
  mha         one fairseq MultiheadAttention self-attention layer over n + m tokens
  tree-attn   one TreeSelfAttention layer over the n leaves + m nodes (accumulation included)
  tree-attn/layer  the same, its batch's plan and masks built beforehand (``prepare``), as the
              encoder builds them once for all its layers: what each layer pays
  layer       one fairseq TransformerEncoderLayerBase (attention, LayerNorms, FFN --ffn) over
              n + m tokens, dropout 0
  tree-layer  one TreeEncoderLayer (the same layer with tree self-attention) over the n leaves +
              m nodes
The tree-attn and tree-layer rows build their SourceTree (accumulation plan, subtree mask) inside
the call, from a fresh copy of the spans (the plan is cached by spans tensor); the encoder builds
it once per batch for all its layers. The last columns are the ratios tree/plain of time and
peak memory: tree-attn / mha, tree-attn/layer / mha and tree-layer / layer.
Peak memory is what the call allocates on top of its inputs (PyTorch's memory timeline, or CUDA's
peak counter on a GPU). The CPU profiler logs "USDT ... profiler_start" lines on stderr.
"""

import argparse
import random
import time

import torch

from bench.lib.dense_reference import dense_accumulation
from bench.lib.report import load_average, machine, markdown_table, write_json
from bench.lib.timing import peak_bytes, seconds
from bench.tasks.random_trees import random_tree_spans

from fairseq.models.transformer import TransformerConfig
from fairseq.modules import MultiheadAttention
from fairseq.modules.transformer_layer import TransformerEncoderLayerBase
from fairseq_tree.modules.hierarchical_accumulation import (
    accumulate,
    build_accumulation_plan,
    hierarchical_accumulation,
)
from fairseq_tree.modules.source_tree import SourceTree
from fairseq_tree.modules.tree_attention import TreeSelfAttention
from fairseq_tree.modules.tree_transformer_layer import TreeEncoderLayer

# Measured rows, in table order; RATIOS: name -> (tree row, plain row) of the tree/plain columns.
NAMES = ("ours", "ours/layer", "dense", "mha", "tree-attn", "tree-attn/layer", "layer",
         "tree-layer")
RATIOS = {"attention": ("tree-attn", "mha"), "attention/layer": ("tree-attn/layer", "mha"),
          "encoder-layer": ("tree-layer", "layer")}


def make_inputs(batch, n, m, dim, heads, rows, seed=0, device="cpu"):
    rng = random.Random(seed)
    spans = torch.zeros(batch, m, 2, dtype=torch.long)
    for b in range(batch):
        for i, span in enumerate(random_tree_spans(rng, n, m)):
            spans[b, i] = torch.tensor(span)
    generator = torch.Generator().manual_seed(seed)

    def rand(*shape):
        return torch.randn(*shape, generator=generator).to(device).requires_grad_()

    return dict(leaves=rand(batch, n, dim), nodes=rand(batch, m, dim), spans=spans.to(device),
                weights=rand(batch, n), vertical=rand(rows, dim // 2),
                horizontal=rand(rows, dim // 2), head_vertical=rand(rows, dim // heads // 2),
                head_horizontal=rand(rows, dim // heads // 2), tokens=rand(n + m, batch, dim))


def accumulation_methods(inputs, rows, dense_too: bool):
    """name -> a function running forward + backward of one accumulation once."""
    x = inputs
    plan = build_accumulation_plan(x["spans"], x["leaves"].size(1), (rows, rows))

    def ours():
        hierarchical_accumulation(x["leaves"], x["nodes"], x["spans"], x["weights"],
                                  x["vertical"], x["horizontal"]).sum().backward()

    def ours_layer():
        accumulate(plan, x["leaves"], x["nodes"], x["weights"],
                   x["head_vertical"], x["head_horizontal"]).sum().backward()

    def dense():
        dense_accumulation(x["leaves"], x["nodes"], x["spans"], x["weights"],
                           x["vertical"], x["horizontal"]).sum().backward()

    return {"ours": ours, "ours/layer": ours_layer, **({"dense": dense} if dense_too else {})}


def encoder_layer_config(dim: int, ffn: int, heads: int) -> TransformerConfig:
    """fairseq's Transformer config of one encoder layer (post-norm, ReLU), dropouts 0 so that
    both layers do the same arithmetic on every call."""
    cfg = TransformerConfig()
    cfg.encoder.embed_dim, cfg.encoder.ffn_embed_dim = dim, ffn
    cfg.encoder.attention_heads = heads
    cfg.dropout = cfg.attention_dropout = cfg.activation_dropout = 0.0
    return cfg


def layer_methods(inputs, dim, ffn, heads, rows, device):
    """name -> a function running forward + backward of one layer over [leaves; nodes] once:
    attention alone, and the whole encoder layer, plain (fairseq's) and with tree attention."""
    tokens, spans = inputs["tokens"], inputs["spans"]  # (n + m) x B x d, B x m x 2
    leaf_padding = torch.zeros(inputs["leaves"].shape[:2], dtype=torch.bool, device=device)
    mha = MultiheadAttention(dim, heads, self_attention=True).to(device)
    tree_attention = TreeSelfAttention(dim, heads, hier_embed_rows=rows).to(device)
    cfg = encoder_layer_config(dim, ffn, heads)
    layer = TransformerEncoderLayerBase(cfg).to(device)
    tree_layer = TreeEncoderLayer(cfg, hier_embed_rows=rows, subtree_masking=True).to(device)

    def tree():  # what TreeEncoder.forward builds once per batch; new spans: a new plan
        return SourceTree.from_batch(leaf_padding, spans.clone())

    prepared = tree_attention.prepare(tree(), tokens.dtype)
    return {
        "mha": lambda: mha(tokens, tokens, tokens, need_weights=False)[0].sum().backward(),
        "tree-attn": lambda: tree_attention(tokens, tokens, tokens, tree())[0].sum().backward(),
        "tree-attn/layer": lambda: tree_attention(tokens, tokens, tokens,
                                                  prepared)[0].sum().backward(),
        "layer": lambda: layer(tokens, encoder_padding_mask=None).sum().backward(),
        "tree-layer": lambda: tree_layer(tokens, tree()).sum().backward(),
    }


def tree_over_plain(row) -> dict:
    """Ratios tree / plain of time and peak memory, for attention and for the encoder layer."""
    return {name: {key: row[tree][key] / row[plain][key] for key in ("ms", "peak_mb")}
            for name, (tree, plain) in RATIOS.items()}


def measure(args, n: int) -> dict:
    """One result row: n, m, {"ms", "peak_mb"} of every method (None where it is not run),
    and the tree/plain ratios."""
    m = round(args.node_ratio * n)
    inputs = make_inputs(args.batch, n, m, args.dim, args.heads, args.rows, device=args.device)
    functions = {**accumulation_methods(inputs, args.rows, dense_too=n <= args.dense_max_n),
                 **layer_methods(inputs, args.dim, args.ffn, args.heads, args.rows, args.device)}
    row = {"n": n, "m": m}
    for name in NAMES:
        function = functions.get(name)
        row[name] = None if function is None else {
            "ms": 1000 * seconds(function, args.repeats, args.device),
            "peak_mb": peak_bytes(function, args.device) / 2**20}
    row["tree/plain"] = tree_over_plain(row)
    return row


def table_labels() -> list:
    """Column labels of the printed table: n, m, ms and MB of each method, then the ratios."""
    measured = [f"{name} {unit}" for name in NAMES for unit in ("ms", "MB")]
    return ["n", "m"] + measured + [f"{name} {unit} x" for name in RATIOS for unit in ("ms", "MB")]


def table_cells(row) -> list:
    cells = [str(row["n"]), str(row["m"])]
    for name in NAMES:
        measured = row[name]
        cells += [f"{measured['ms']:.2f}", f"{measured['peak_mb']:.1f}"] if measured else ["-"] * 2
    for ratio in row["tree/plain"].values():
        cells += [f"{ratio['ms']:.2f}", f"{ratio['peak_mb']:.2f}"]
    return cells


def table_line(cells: list) -> str:
    return "  ".join(f"{cell:>{max(len(label), 5)}}" for cell, label in zip(cells, table_labels()))


def measured(row, name: str) -> list:
    """A method's ms (2 decimals) and peak MB (1 decimal), "-" twice where it was not run."""
    cells = row[name]
    return [f"{cells['ms']:.2f}", f"{cells['peak_mb']:.1f}"] if cells else ["-", "-"]


def accumulation_table(report) -> list:
    """RESULTS' table of the accumulation alone: ours (plan included), ours per layer (plan
    shared) and the dense S reference, ms and MB at each n."""
    header = ["n", "m", "ours ms", "ours MB", "ours/layer ms", "ours/layer MB", "dense S ms",
              "dense S MB"]
    return markdown_table(header, [[row["n"], row["m"], *measured(row, "ours"),
                                    *measured(row, "ours/layer"), *measured(row, "dense")]
                                   for row in report["results"]])


def layers_table(report) -> list:
    """RESULTS' table of attention and encoder layers: fairseq's against the tree's over the same
    n + m tokens, ms and MB, and the ratios tree/plain."""
    header = ["n", "m", "MHA ms", "MHA MB", "tree-attn ms", "tree-attn MB", "time x", "memory x",
              "tree-attn/layer ms", "tree-attn/layer MB", "time x", "memory x", "layer ms",
              "layer MB", "tree-layer ms", "tree-layer MB", "time x", "memory x"]
    rows = []
    for row in report["results"]:
        ratios = row["tree/plain"]
        cells = [row["n"], row["m"], *measured(row, "mha")]
        for name, ratio in (("tree-attn", "attention"), ("tree-attn/layer", "attention/layer")):
            cells += measured(row, name) + [f"{ratios[ratio]['ms']:.2f}",
                                            f"{ratios[ratio]['peak_mb']:.2f}"]
        cells += measured(row, "layer") + measured(row, "tree-layer") + [
            f"{ratios['encoder-layer']['ms']:.2f}", f"{ratios['encoder-layer']['peak_mb']:.2f}"]
        rows.append(cells)
    return markdown_table(header, rows)


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 32, 64, 128, 256], metavar="N")
    parser.add_argument("--node-ratio", type=float, default=0.8, help="m = round(ratio * n)")
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--ffn", type=int, default=2048, help="FFN width of the encoder layers")
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rows", type=int, default=100, help="|E| of the embeddings")
    parser.add_argument("--dense-max-n", type=int, default=128,
                        help="run the dense S reference only up to this n (it needs B m n d "
                        "floats)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--json", metavar="FILE", help="also write the results here")
    parser.add_argument("--markdown", action="store_true",
                        help="at the end, print the two tables as bench/RESULTS.md shows them")
    return parser


def main(argv=None):
    args = get_parser().parse_args(argv)
    where = machine(args.device)
    print(table_line(table_labels()), flush=True)
    results = []
    for n in args.sizes:
        results.append(measure(args, n))
        print(table_line(table_cells(results[-1])), flush=True)
    report = {
        "benchmark": "hierarchical accumulation, attention and encoder layers, forward + backward",
        "settings": {k: v for k, v in vars(args).items() if k not in ("json", "markdown")},
        "machine": {**where, "load_average_after": load_average()},
        "date": time.strftime("%Y-%m-%d"),
        "results": results,
    }
    if args.markdown:
        print("\n".join(accumulation_table(report) + [""] + layers_table(report)), flush=True)
    if args.json:
        write_json(args.json, report)
    return report


if __name__ == "__main__":
    main()
