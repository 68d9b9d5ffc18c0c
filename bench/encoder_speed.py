"""Time of one training step against sentence length for the tree encoders of the
tree_classification task and fairseq's roberta on the leaves, all at CPU size (d 64): the
question of Nguyen et al.'s Fig. 5b (there: 1,000 steps of batch 1 on one GPU, a sentiment task).

    python -m bench.encoder_speed                          # n = 8 ... 256, batch 1 and 32
    python -m bench.encoder_speed --threads 1 --json bench/results/encoder-speed-cpu.json \
        --plot bench/results/encoder-speed-cpu.png             # about 5 minutes on one core

A step is forward + backward + an Adam update of one batch of random sentences of n words:
random constituency trees with m = round(0.8 n) nodes (a random binary tree with nodes dropped,
as bench/accumulation.py draws them; ``--shape chain`` for right-branching chains, the deepest
trees), random POS tags, one class per sentence, cross-entropy at the root. No data loading.

  tree_classifier_tiny                      hierarchical accumulation (2 layers, 4 heads, FFN 128)
  recursive_multibranch_classifier_tiny     Ahmed et al.'s CTT (d 60, 6 branches), embeddings
  recursive_tree_attention_classifier_tiny  Recursive Tree Attention over a 2-layer Transformer
  roberta                                   fairseq's roberta, 2 layers, d 64, 4 heads, FFN 128,
                                            on <s> + the leaves

The recursive encoders take one composition step per tree height, so their time follows the
height of the trees (reported per length), not the number of nodes.
"""

import argparse
import os
import random
import statistics
import time
from types import SimpleNamespace

import torch
import torch.nn.functional as F

from bench.lib.timing import seconds
from bench.tasks.random_trees import random_tree_spans
from bench.lib.report import load_average, machine, markdown_table, write_json

from fairseq import options
from fairseq.data import Dictionary
from fairseq.models import build_model

from fairseq_tree.data.label_dictionary import label_symbol

PLUGIN_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "fairseq_tree")
HEAD = "sentence_classification_head"
ROBERTA_TINY = ["--encoder-layers", "2", "--encoder-embed-dim", "64", "--encoder-ffn-embed-dim",
                "128", "--encoder-attention-heads", "4", "--max-positions", "1024"]
TREES = ["--max-source-positions", "4096"]
MODELS = {
    "tree_classifier_tiny": ["--arch", "tree_classifier_tiny", *TREES],
    "recursive_multibranch_classifier_tiny": [
        "--arch", "recursive_multibranch_classifier_tiny", *TREES],
    "recursive_tree_attention_classifier_tiny": [
        "--arch", "recursive_tree_attention_classifier_tiny", *TREES],
    "roberta": ["--arch", "roberta", *ROBERTA_TINY],
}
LABELS, TAGS = ["S", "NP", "VP", "PP", "ADJP", "SBAR"], ["DT", "NN", "JJ", "VBZ", "IN", "RB"]


def build_dictionary(words: int) -> Dictionary:
    """``words`` word types plus the [LABEL] and [TAG] symbols, as fairseq-tree-preprocess
    writes them."""
    dictionary = Dictionary()
    for symbol in [f"w{k}" for k in range(words)] + [label_symbol(x) for x in LABELS + TAGS]:
        dictionary.add_symbol(symbol)
    dictionary.add_symbol("<mask>")  # as sentence_prediction loads dictionaries
    return dictionary


def build_classifier(name: str, dictionary: Dictionary, classes: int):
    """The registered model ``name``, built as the tree_classification task builds it."""
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [
        "unused", "--user-dir", PLUGIN_DIR, "--task", "tree_classification", "--dropout", "0.1",
        *MODELS[name]])
    task = SimpleNamespace(source_dictionary=dictionary, cfg=SimpleNamespace(node_targets=False))
    model = build_model(args, task)
    model.register_classification_head(HEAD, num_classes=classes)
    return model


def spans_of(rng: random.Random, n: int, m: int, shape: str) -> list:
    if shape == "chain":
        return [(i, n) for i in range(max(m, 1) if n > 1 else 0)][: max(n - 1, 0)]
    return random_tree_spans(rng, n, m) if n > 1 else []


def tree_height(spans: list) -> int:
    """Nodes on the longest root-to-leaf path (0 for a tree without nodes)."""
    return max((sum(s <= start and end <= e for s, e in spans) for start, end in spans),
               default=0)


def make_batch(rng: random.Random, dictionary: Dictionary, batch: int, n: int, shape: str,
               node_ratio: float, words: int):
    """The net input of ``batch`` random trees of n leaves (right-padded as the task collates
    them; all rows have n leaves), B targets, and the mean tree height."""
    m = round(node_ratio * n)
    trees = [spans_of(rng, n, m, shape) for _ in range(batch)]
    width = max(len(t) for t in trees)
    tokens = torch.tensor([[dictionary.index(f"w{rng.randrange(words)}") for _ in range(n)]
                           + [dictionary.eos()] for _ in range(batch)])
    spans = torch.zeros(batch, width, 2, dtype=torch.long)
    labels = torch.full((batch, width), dictionary.pad(), dtype=torch.long)
    for b, tree in enumerate(trees):
        for i, span in enumerate(tree):
            spans[b, i] = torch.tensor(span)
            labels[b, i] = dictionary.index(label_symbol(rng.choice(LABELS)))
    tags = torch.tensor([[dictionary.index(label_symbol(rng.choice(TAGS))) for _ in range(n)]
                         + [dictionary.pad()] for _ in range(batch)])
    net_input = {"src_tokens": tokens, "src_lengths": torch.full((batch,), n + 1),
                 "src_node_labels": labels, "src_node_spans": spans, "src_leaf_tags": tags}
    targets = torch.tensor([rng.randrange(2) for _ in range(batch)])
    return net_input, targets, statistics.mean(tree_height(t) for t in trees)


def roberta_input(net_input, dictionary: Dictionary):
    """<s> (index 0, as --init-token 0) + the leaves + EOS: what the baseline reads."""
    tokens = net_input["src_tokens"]
    bos = tokens.new_full((tokens.size(0), 1), dictionary.bos())
    return {"src_tokens": torch.cat([bos, tokens], dim=1)}


def training_step(model, optimizer, net_input, targets):
    optimizer.zero_grad()
    logits, _ = model(**net_input, features_only=True, classification_head_name=HEAD)
    F.cross_entropy(logits, targets).backward()
    optimizer.step()


def measure(args, name: str, dictionary: Dictionary, n: int, batch: int) -> dict:
    torch.manual_seed(args.seed)
    model = build_classifier(name, dictionary, classes=2).to(args.device).train()
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    rng = random.Random(args.seed * 1000 + n)
    net_input, targets, height = make_batch(rng, dictionary, batch, n, args.shape,
                                            args.node_ratio, args.words)
    if name == "roberta":
        net_input = roberta_input(net_input, dictionary)
    elif "tags" not in model.leaf_annotations():
        del net_input["src_leaf_tags"]
    net_input = {key: value.to(args.device) for key, value in net_input.items()}
    targets = targets.to(args.device)
    ms = 1000 * seconds(lambda: training_step(model, optimizer, net_input, targets),
                        args.repeats, args.device, warm_ups=2)
    parameters = sum(p.numel() for p in model.parameters())
    return {"model": name, "n": n, "batch": batch, "ms": ms, "mean_height": height,
            "parameters": parameters}


def plot(rows: list, models: list, batches: list, path: str):
    """Milliseconds per training step against n, one panel per batch size, one line a model
    (matplotlib, from the bench extra)."""
    import logging

    logging.getLogger("matplotlib").setLevel(logging.WARNING)  # fairseq set the root to DEBUG
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(1, len(batches), figsize=(5 * len(batches), 4), squeeze=False)
    for axis, batch in zip(axes[0], batches):
        for model in models:
            mine = sorted((r for r in rows if r["model"] == model and r["batch"] == batch),
                          key=lambda r: r["n"])
            axis.plot([r["n"] for r in mine], [r["ms"] for r in mine], marker="o", label=model)
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xlabel("sentence length n (words)")
        axis.set_ylabel("ms per training step")
        axis.set_title(f"batch {batch}")
        axis.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    figure.savefig(path, dpi=100)


def speed_table(report: dict) -> list[str]:
    """Milliseconds per training step, a row per batch size and length (with the batch's mean
    tree height), a column per model."""
    rows, models = {}, list(dict.fromkeys(r["model"] for r in report["results"]))
    for r in report["results"]:
        row = rows.setdefault((r["batch"], r["n"]), {"height": r["mean_height"]})
        row[r["model"]] = f"{r['ms']:.2f}"
    return markdown_table(["batch", "n", "height", *models], [
        [batch, n, f"{row['height']:.1f}", *(row.get(m, "") for m in models)]
        for (batch, n), row in sorted(rows.items())])


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[8, 16, 32, 64, 128, 256],
                        metavar="N")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 32],
                        help="batch sizes (1: the paper's Fig. 5b)")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--shape", choices=["random", "chain"], default="random")
    parser.add_argument("--node-ratio", type=float, default=0.8, help="m = round(ratio * n)")
    parser.add_argument("--words", type=int, default=1000, help="vocabulary size")
    parser.add_argument("--repeats", type=int, default=20, help="timed steps per point")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, help="CPU threads (default: torch's); on cores "
                        "that other processes share, 1 gives steadier times")
    parser.add_argument("--json", metavar="FILE", help="also write the results here")
    parser.add_argument("--plot", metavar="PNG", help="also draw them here")
    return parser


def main(argv=None) -> dict:
    args = get_parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    where = machine(args.device)
    dictionary = build_dictionary(args.words)
    print(f"{'model':<42} {'batch':>5} {'n':>5} {'height':>7} {'ms/step':>9}", flush=True)
    rows = []
    for batch in args.batches:
        for n in args.lengths:
            for name in args.models:
                rows.append(measure(args, name, dictionary, n, batch))
                row = rows[-1]
                print(f"{name:<42} {batch:>5} {n:>5} {row['mean_height']:>7.1f} "
                      f"{row['ms']:>9.2f}", flush=True)
    report = {
        "benchmark": "one training step (forward + backward + Adam) against sentence length",
        "settings": {k: v for k, v in vars(args).items() if k not in ("json", "plot")},
        "machine": {**where, "load_average_after": load_average()},
        "date": time.strftime("%Y-%m-%d"),
        "results": rows,
    }
    print("\n".join(speed_table(report)), flush=True)
    if args.json:
        write_json(args.json, report)
    if args.plot:
        plot(rows, args.models, args.batches, args.plot)
    return report


if __name__ == "__main__":
    main()
