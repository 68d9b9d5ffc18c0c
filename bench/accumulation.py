"""Time and peak memory of hierarchical accumulation: ours, the dense reference that builds S,
and attention layers over the same n + m tokens. Forward + backward, as in training.

    python bench/accumulation.py                      # n = 16 32 64 128, m = 0.8 n, d 512, B 32
    python bench/accumulation.py --json bench/results/accumulation-cpu.json

Rows (each forward + backward, on random trees with m = round(0.8 n) nodes):
  ours        hierarchical_accumulation (Eq. 10), per batch plan included
  ours/layer  the per-layer part (``accumulate``) when the plan is shared by the layers
  dense       bench/dense_reference.py, which materialises S (B x m x n x d) like the authors' code
  mha         one fairseq MultiheadAttention self-attention layer over n + m tokens
  tree-attn   one TreeSelfAttention layer over the n leaves + m nodes (accumulation included)
Peak memory is what the call allocates on top of its inputs (PyTorch's memory timeline, or CUDA's
peak counter on a GPU). The CPU profiler logs "USDT ... profiler_start" lines on stderr.
"""

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dense_reference import dense_accumulation  # noqa: E402

from fairseq.modules import MultiheadAttention  # noqa: E402
from fairseq_tree.modules.hierarchical_accumulation import (  # noqa: E402
    accumulate,
    build_accumulation_plan,
    hierarchical_accumulation,
)
from fairseq_tree.modules.source_tree import SourceTree  # noqa: E402
from fairseq_tree.modules.tree_attention import TreeSelfAttention  # noqa: E402


def random_tree_spans(rng: random.Random, n: int, m: int) -> list:
    """m distinct nested spans over n leaves: a random binary tree (n - 1 nodes) with nodes
    dropped at random (a subset of a nested family stays nested), the root kept."""
    spans, stack = [], [(0, n)]
    while stack:
        start, end = stack.pop()
        if end - start < 2:
            continue
        spans.append((start, end))
        cut = rng.randint(start + 1, end - 1)
        stack += [(start, cut), (cut, end)]
    root, rest = spans[0], spans[1:]
    rng.shuffle(rest)
    return [root] + rest[: max(0, m - 1)]


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


def methods(inputs, dim, heads, rows, device):
    """name -> a function running forward + backward once."""
    x = inputs
    plan = build_accumulation_plan(x["spans"], x["leaves"].size(1), (rows, rows))
    mha = MultiheadAttention(dim, heads, self_attention=True).to(device)
    tree_attention = TreeSelfAttention(dim, heads, hier_embed_rows=rows).to(device)
    leaf_padding = torch.zeros(x["leaves"].shape[:2], dtype=torch.bool, device=device)

    def ours():
        hierarchical_accumulation(x["leaves"], x["nodes"], x["spans"], x["weights"],
                                  x["vertical"], x["horizontal"]).sum().backward()

    def ours_layer():
        accumulate(plan, x["leaves"], x["nodes"], x["weights"],
                   x["head_vertical"], x["head_horizontal"]).sum().backward()

    def dense():
        dense_accumulation(x["leaves"], x["nodes"], x["spans"], x["weights"],
                           x["vertical"], x["horizontal"]).sum().backward()

    def plain_attention():
        mha(x["tokens"], x["tokens"], x["tokens"], need_weights=False)[0].sum().backward()

    def tree_attention_layer():
        tree = SourceTree.from_batch(leaf_padding, x["spans"])
        tree_attention(x["tokens"], x["tokens"], x["tokens"], tree)[0].sum().backward()

    return {"ours": ours, "ours/layer": ours_layer, "dense": dense, "mha": plain_attention,
            "tree-attn": tree_attention_layer}


def seconds(function, repeats: int, device: str) -> float:
    function()  # warm-up
    times = []
    for _ in range(repeats):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        function()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak_bytes(function, device: str) -> int:
    """Bytes allocated by one call at its peak, on top of what existed before it."""
    if device == "cuda":
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        function()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - before
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                 with_stack=True) as profiler:
        function()
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # the timeline is the CPU's only record
        path = os.path.join(folder, "timeline.json")
        profiler.export_memory_timeline(path, device="cpu")
        with open(path) as handle:
            _, sizes = json.load(handle)
    return max((sum(row) for row in sizes), default=0)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 32, 64, 128], metavar="N")
    parser.add_argument("--node-ratio", type=float, default=0.8, help="m = round(ratio * n)")
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rows", type=int, default=100, help="|E| of the embeddings")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--json", metavar="FILE", help="also write the results here")
    args = parser.parse_args(argv)

    results = []
    names = ("ours", "ours/layer", "dense", "mha", "tree-attn")
    header = f"{'n':>5} {'m':>5}  " + "  ".join(f"{name + ' ms':>14} {name + ' MB':>14}" for name in names)
    print(header, flush=True)
    for n in args.sizes:
        m = round(args.node_ratio * n)
        inputs = make_inputs(args.batch, n, m, args.dim, args.heads, args.rows, device=args.device)
        row = {"n": n, "m": m}
        for name, function in methods(inputs, args.dim, args.heads, args.rows, args.device).items():
            row[name] = {"ms": 1000 * seconds(function, args.repeats, args.device),
                         "peak_mb": peak_bytes(function, args.device) / 2**20}
        results.append(row)
        print(f"{n:>5} {m:>5}  " + "  ".join(
            f"{row[k]['ms']:>14.2f} {row[k]['peak_mb']:>14.1f}"
            for k in names), flush=True)
    report = {
        "benchmark": "hierarchical accumulation, forward + backward",
        "settings": {k: v for k, v in vars(args).items() if k != "json"},
        "machine": {"platform": platform.platform(), "processor": platform.processor(),
                    "threads": torch.get_num_threads(), "torch": torch.__version__,
                    "device_name": torch.cuda.get_device_name() if args.device == "cuda" else "cpu"},
        "date": time.strftime("%Y-%m-%d"),
        "results": results,
    }
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as handle:
            json.dump(report, handle, indent=2)
    return report


if __name__ == "__main__":
    main()
