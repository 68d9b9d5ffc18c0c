"""fairseq-tree-analyze: where a trained tree2seq model looks, phrases (nodes) or words (leaves),
as the paper's Table 4 (Nguyen et al., ICLR 2020, Section 6), with pictures.

    fairseq-tree-analyze DATA-BIN --path checkpoints/tree2seq/checkpoint_best.pt \\
        [--gen-subset test] [--json analysis.json] [--plot DIR --sentence 0]

The model reads every sentence of the split with its reference translation (teacher forcing, as
in training; no beam search). Reported:

* decoder (tree cross-attention, Eqs. 21-24): for each target token, the attention probability
  on the node keys, on the word keys and on the source EOS, averaged over heads, layers and the
  split's target tokens (every token counts once); also per layer, and per node label (the
  probability on nodes of that label; beside it the label's share of the split's nodes, which is
  what uniform attention over the nodes would give);
* encoder (tree self-attention): the same for the node queries (Eq. 17: a node attends the words
  of its span and the nodes of its subtree); leaf queries attend leaves only (Eq. 18), so they
  are not counted;
* the split's constituents: words and nodes (EOS counted in neither), as the paper's
  Leaves/Nodes row;
* the paper's Table 4 beside them.

Choices the paper leaves open, made here: probability mass (not argmax counts); teacher forcing
on the references; heads and layers averaged with equal weight; EOS, a leaf key of the model,
reported apart from the words. ``--plot DIR`` draws, for sentence ``--sentence``, the source
tree (nodes above their words) over a heat map of each target token's cross-attention on the
same columns (mean over heads and layers, or ``--plot-layer``), and the node share per layer
as a bar chart (PNG, matplotlib).

The probabilities are the attentions' own: each is asked for its per-head weights
(``need_head_weights``, as fairseq's ``MultiheadAttention``) by a forward hook.
"""

import argparse
import json
import logging
import os
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import torch
from torch import Tensor

from fairseq_tree.cli.console import CliError, open_output, run_console
from fairseq_tree.data.label_dictionary import symbol_label
from fairseq_tree.data.tree_paths import select_rows

logger = logging.getLogger("fairseq_tree.cli.analyze")
PROG = "fairseq-tree-analyze"

# Table 4 of the paper (%): the share of the test sets' constituents that are leaves / nodes,
# and the cross-attention on nodes (mean ± the paper's unexplained spread).
PAPER_TABLE_4 = {
    "En-De": {"leaves": 59.2, "nodes": 40.8, "target_to_nodes": 66.4},
    "En-Fr": {"leaves": 59.3, "nodes": 40.7, "target_to_nodes": 61.9},
    "De-En": {"leaves": 66.4, "nodes": 33.6, "target_to_nodes": 64.9},
    "Fr-En": {"leaves": 64.7, "nodes": 35.3, "target_to_nodes": 59.3},
}


@dataclass
class AttentionTally:
    """Sums over the queries of one attention kind, layer by layer: each query's probability
    on node keys, word keys and EOS (mean over heads), and on the nodes of each label."""

    queries: int = 0
    nodes: Dict[int, float] = field(default_factory=lambda: defaultdict(float))
    words: Dict[int, float] = field(default_factory=lambda: defaultdict(float))
    eos: Dict[int, float] = field(default_factory=lambda: defaultdict(float))
    labels: Dict[str, float] = field(default_factory=lambda: defaultdict(float))
    queries_per_layer: Dict[int, int] = field(default_factory=lambda: defaultdict(int))

    def add(self, layer: int, probs: Tensor, queries: Tensor, key_kinds: Dict[str, Tensor],
            node_labels: Tensor, label_names: List[str], num_leaves: int):
        """probs: B x H x Q x S over [leaves; nodes]; queries: B x Q bool (the counted ones);
        key_kinds: B x S bool masks "nodes", "words", "eos"; node_labels: B x M label ids."""
        mean = probs.double().mean(dim=1)  # B x Q x S, heads averaged
        counted = queries.unsqueeze(-1).double()
        for kind, total in (("nodes", self.nodes), ("words", self.words), ("eos", self.eos)):
            mass = (mean * key_kinds[kind].unsqueeze(1)).sum(-1, keepdim=True)
            total[layer] += float((mass * counted).sum())
        self.queries_per_layer[layer] += int(queries.sum())
        on_nodes = (mean[..., num_leaves:] * counted).sum(dim=1)  # B x M
        real_nodes = key_kinds["nodes"][:, num_leaves:]
        for label_id in node_labels[real_nodes].unique().tolist():
            chosen = (node_labels == label_id) & real_nodes
            self.labels[label_names[label_id]] += float(on_nodes[chosen].sum())

    def report(self, label_counts: Dict[str, int]) -> Optional[dict]:
        """Percentages: overall (mean over layers), per layer, per node label."""
        layers = sorted(self.queries_per_layer)
        if not layers or not self.queries_per_layer[layers[0]]:
            return None
        share = lambda total, layer: 100 * total[layer] / self.queries_per_layer[layer]
        overall = lambda total: sum(share(total, k) for k in layers) / len(layers)
        all_queries = sum(self.queries_per_layer.values())
        nodes_total = sum(label_counts.values())
        return {
            "queries": self.queries_per_layer[layers[0]],
            "nodes": overall(self.nodes), "words": overall(self.words), "eos": overall(self.eos),
            "per_layer": [{"layer": k + 1, "nodes": share(self.nodes, k),
                           "words": share(self.words, k), "eos": share(self.eos, k)}
                          for k in layers],
            "per_label": {label: {"attention": 100 * self.labels.get(label, 0.0) / all_queries,
                                  "share_of_nodes": 100 * count / nodes_total}
                          for label, count in sorted(label_counts.items(),
                                                     key=lambda item: -item[1])},
        }


def key_kinds(src_tokens: Tensor, node_padding: Tensor, pad: int, eos: int) -> Dict[str, Tensor]:
    """B x (N+M) bool masks of the keys [leaves; nodes]: node keys, word keys, the EOS key."""
    no_nodes = torch.zeros_like(node_padding)
    no_leaves = torch.zeros_like(src_tokens, dtype=torch.bool)
    return {"nodes": torch.cat([no_leaves, ~node_padding], dim=1),
            "words": torch.cat([(src_tokens != pad) & (src_tokens != eos), no_nodes], dim=1),
            "eos": torch.cat([src_tokens == eos, no_nodes], dim=1)}


class AttentionRecorder:
    """Hooks on every tree attention of a model: a forward pre-hook asks for the per-head weights
    (``need_head_weights``; the layers call the attentions without them), a forward hook passes
    them to ``record(kind, layer, probs)``: kind "decoder", cross-attention, B x H x T x S;
    "encoder", the node queries of self-attention, B x H x M x S (S keys: [leaves; nodes])."""

    def __init__(self, model, record):
        from fairseq_tree.modules.tree_attention import TreeCrossAttention, TreeSelfAttention

        self.handles = []
        for cls, kind in ((TreeSelfAttention, "encoder"), (TreeCrossAttention, "decoder")):
            modules = [m for m in model.modules() if isinstance(m, cls)]
            for layer, module in enumerate(modules):
                def hook(module, args, kwargs, output, kind=kind, layer=layer):
                    probs = output[1].transpose(0, 1)  # H x B x Q x S -> B x H x Q x S
                    if kind == "encoder":  # the node queries, after the leaves
                        probs = probs[:, :, kwargs["key_padding_mask"].num_leaves:]
                    record(kind, layer, probs)
                self.handles.append(module.register_forward_pre_hook(
                    self.need_head_weights, with_kwargs=True))
                self.handles.append(module.register_forward_hook(hook, with_kwargs=True))

    @staticmethod
    def need_head_weights(module, args, kwargs):
        return args, {**kwargs, "need_head_weights": True}

    def remove(self):
        for handle in self.handles:
            handle.remove()


def label_names(dictionary) -> List[str]:
    """Every symbol of the dictionary, node label symbols ``[NP]`` shown as ``NP``."""
    return [symbol_label(symbol) or symbol for symbol in dictionary.symbols]


def analyze(model, task, split: str, max_tokens: int = 4096,
            max_sentences: Optional[int] = None) -> dict:
    """The attention shares of ``model`` on ``split`` of ``task`` (teacher-forced), as JSON."""
    task.load_dataset(split)
    dataset = task.dataset(split)
    dictionary = task.source_dictionary
    pad, eos, names = dictionary.pad(), dictionary.eos(), label_names(dictionary)
    tallies = {"decoder": AttentionTally(), "encoder": AttentionTally()}
    counts = {"sentences": 0, "target_tokens": 0, "words": 0, "nodes": 0}
    label_counts: Dict[str, int] = defaultdict(int)
    batch = {}

    def record(kind, layer, probs):
        queries = batch["target"] != task.target_dictionary.pad() if kind == "decoder" \
            else ~batch["node_padding"]
        tallies[kind].add(layer, probs, queries, batch["kinds"], batch["labels"], names,
                          batch["num_leaves"])

    indices = range(len(dataset)) if max_sentences is None else range(min(max_sentences,
                                                                           len(dataset)))
    itr = task.get_batch_iterator(dataset, max_tokens=max_tokens,
                                  max_positions=None, ignore_invalid_inputs=False,
                                  ).next_epoch_itr(shuffle=False)
    recorder = AttentionRecorder(model, record)
    model.eval()
    try:
        with torch.no_grad():
            for sample in itr:
                keep = torch.tensor([int(i) in indices for i in sample["id"]])
                if not keep.any():
                    continue
                net = {k: (v[keep] if torch.is_tensor(v) else v)
                       for k, v in sample["net_input"].items() if k != "src_embedding_paths"}
                if "src_embedding_paths" in sample["net_input"]:
                    net["src_embedding_paths"] = select_rows(
                        sample["net_input"]["src_embedding_paths"], keep.nonzero().view(-1))
                spans = net["src_node_spans"]
                node_padding = spans[..., 0] >= spans[..., 1]
                batch.update(target=sample["target"][keep], node_padding=node_padding,
                             labels=net["src_node_labels"],
                             num_leaves=net["src_tokens"].size(1),
                             kinds=key_kinds(net["src_tokens"], node_padding, pad, eos))
                model(**net)
                counts["sentences"] += int(keep.sum())
                counts["target_tokens"] += int((batch["target"] != task.target_dictionary.pad()
                                                ).sum())
                counts["words"] += int(batch["kinds"]["words"].sum())
                counts["nodes"] += int((~node_padding).sum())
                for label_id, count in zip(*net["src_node_labels"][~node_padding].unique(
                        return_counts=True)):
                    label_counts[names[int(label_id)]] += int(count)
    finally:
        recorder.remove()
    constituents = counts["words"] + counts["nodes"]
    return {
        "split": split, **counts,
        "constituents": {"words": 100 * counts["words"] / constituents,
                         "nodes": 100 * counts["nodes"] / constituents},
        "decoder": tallies["decoder"].report(label_counts),
        "encoder": tallies["encoder"].report(label_counts),
        "choices": "probability mass; teacher forcing on the references; heads, layers and "
                   "tokens averaged with equal weight; EOS apart from the words",
        "paper_table_4": PAPER_TABLE_4,
    }


# ---------------------------------------------------------------------------------------------
# Printing


def table(result: dict) -> List[str]:
    lines = [f"{result['split']}: {result['sentences']:,} sentences, {result['target_tokens']:,} "
             f"target tokens; source constituents: words {result['constituents']['words']:.1f}% "
             f"/ nodes {result['constituents']['nodes']:.1f}%"]
    for kind, title in (("decoder", "target -> source (cross-attention)"),
                        ("encoder", "source nodes -> source (self-attention, node queries)")):
        shares = result[kind]
        if shares is None:
            continue
        lines.append(f"{title}: nodes {shares['nodes']:.1f}%  words {shares['words']:.1f}%  "
                     f"EOS {shares['eos']:.1f}%")
        lines.append("  per layer (nodes): " + "  ".join(
            f"{row['layer']}: {row['nodes']:.1f}" for row in shares["per_layer"]))
        top = list(shares["per_label"].items())[:8]
        lines.append("  per label (attention % / share of nodes %): " + "  ".join(
            f"{label} {row['attention']:.1f}/{row['share_of_nodes']:.1f}" for label, row in top))
    lines.append("paper, Table 4 (Leaves/Nodes; Target->Nodes): " + "; ".join(
        f"{pair} {row['leaves']}/{row['nodes']}; {row['target_to_nodes']}"
        for pair, row in PAPER_TABLE_4.items()))
    return lines


def _model_name(result: dict) -> str:
    """A column's name: the recipe folder of the data the model was read on."""
    return os.path.basename(os.path.dirname(result["data"].rstrip("/"))) + " model"


def _others(other: Optional[str]) -> List[dict]:
    """The JSON of ``other`` (a path from the checkout's root), as a list; none without it."""
    if other is None:
        return []
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, other), encoding="utf-8") as source:
        return [json.load(source)]


def _markdown(header: List[str], rows: List[List[str]]) -> List[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(row) + " |" for row in rows]


def markdown_table(result: dict, other: Optional[str] = None,
                   paper: tuple = ("En-Fr", "En-De")) -> List[str]:
    """The paper's Table 4 as bench/RESULTS.md gives it: the source constituents that are words
    and nodes, the decoder's attention on nodes (all layers, then by layer) and the encoder's
    node queries' attention on nodes, for ``result`` and the model of the JSON ``other`` (a
    path from the checkout's root), then the paper's models of ``paper``."""
    results = [result, *_others(other)]
    paper_rows = [result["paper_table_4"][pair] for pair in paper]
    layers = " / ".join(str(row["layer"]) for row in result["decoder"]["per_layer"])

    def by_layer(shares: dict, sep: str = "% / ") -> str:
        return sep.join(f"{row['nodes']:.1f}" for row in shares["per_layer"]) + "%" * (sep != " / ")

    rows = [["source constituents: words / nodes",
             *(f"{r['constituents']['words']:.1f}% / {r['constituents']['nodes']:.1f}%"
               for r in results),
             *(f"{p['leaves']}% / {p['nodes']}%" for p in paper_rows)],
            ["target -> nodes (decoder cross-attention)",
             *(f"{r['decoder']['nodes']:.1f}% (words {r['decoder']['words']:.1f}%, "
               f"EOS {r['decoder']['eos']:.1f}%)" for r in results),
             *(f"{p['target_to_nodes']}%" for p in paper_rows)],
            [f"by decoder layer {layers}", *(by_layer(r["decoder"]) for r in results),
             *("" for _ in paper_rows)],
            ["source nodes -> nodes (encoder, node queries)",
             *(f"{r['encoder']['nodes']:.1f}% (layers: {by_layer(r['encoder'], ' / ')})"
               for r in results), *("" for _ in paper_rows)]]
    header = ["", *(f"{_model_name(r)} ({r['sentences']:,} {r['split']} sentences)"
                    for r in results), *(f"paper, {pair}" for pair in paper)]
    return _markdown(header, rows)


def label_table(result: dict, other: Optional[str] = None, min_share: float = 2.0) -> List[str]:
    """By node label: the decoder's attention on the label as a share of all its attention on
    nodes, against the label's share of the nodes (what uniform attention would give), for
    ``result`` and the model of the JSON ``other``; the labels with at least ``min_share``
    percent of either in some model, by ``result``'s attention share."""
    results = [result, *_others(other)]

    def shares(r: dict, label: str) -> tuple:
        row = r["decoder"]["per_label"].get(label)
        if row is None:
            return None
        return 100 * row["attention"] / r["decoder"]["nodes"], row["share_of_nodes"]

    labels = [label for label in dict.fromkeys(l for r in results for l in r["decoder"]["per_label"])
              if any(max(shares(r, label) or (0, 0)) >= min_share for r in results)]
    labels.sort(key=lambda label: -(shares(result, label) or (0, 0))[0])
    rows = [[label, *("-" if shares(r, label) is None else
                      "{:.1f}% / {:.1f}%".format(*shares(r, label)) for r in results)]
            for label in labels]
    return _markdown(["label", *(f"{_model_name(r)}: share of node attention / of nodes"
                                 for r in results)], rows)


# ---------------------------------------------------------------------------------------------
# Pictures


def sentence_attention(model, task, split: str, index: int, layer: Optional[int]) -> dict:
    """One sentence's source tree and its cross-attention (T x S, mean over heads and over the
    layers, or of ``layer``), teacher-forced."""
    dataset = task.dataset(split)
    if not 0 <= index < len(dataset):
        raise CliError(f"--sentence {index}: {split} has sentences 0..{len(dataset) - 1}")
    sample = dataset.collater([dataset[index]])
    captured = []

    def record(kind, at, probs):
        if kind == "decoder" and (layer is None or at == layer):
            captured.append(probs[0].double().mean(dim=0))  # T x S
    recorder = AttentionRecorder(model, record)
    model.eval()
    try:
        with torch.no_grad():
            model(**sample["net_input"])
    finally:
        recorder.remove()
    if not captured:
        raise CliError(f"--plot-layer {layer + 1}: the decoder has no such layer")
    net, source, target = sample["net_input"], task.source_dictionary, task.target_dictionary
    names = label_names(source)
    return {"attention": torch.stack(captured).mean(dim=0),
            "leaves": [source[int(t)] for t in net["src_tokens"][0]],
            "labels": [names[int(x)] for x in net["src_node_labels"][0]],
            "spans": net["src_node_spans"][0].tolist(),
            "target": [target[int(t)] for t in sample["target"][0]]}


def key_columns(spans: List[List[int]], num_leaves: int) -> List[int]:
    """The keys [leaves; nodes] ordered left to right for drawing: a node stands at the middle
    of its span, after the words there and above its children."""
    position = [(j, 0, 0) for j in range(num_leaves)]
    for i, (start, end) in enumerate(spans):
        position.append(((start + end - 1) / 2, 1, start - end))
    return sorted(range(len(position)), key=position.__getitem__)


def plot_sentence(picture: dict, path: str):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    leaves, spans = picture["leaves"], picture["spans"]
    n = len(leaves)
    real = [k for k, (s, e) in enumerate(spans) if s < e]
    keys = [c for c in key_columns(spans, n) if c < n or (c - n) in real]
    column = {key: x for x, key in enumerate(keys)}
    height = {}
    for i in sorted(real, key=lambda i: spans[i][1] - spans[i][0]):
        s, e = spans[i]
        inner = [k for k in real if k != i and s <= spans[k][0] and spans[k][1] <= e]
        height[i] = 1 + max((height[k] for k in inner), default=0)
    attention = picture["attention"][:, keys].numpy()
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(max(6, 0.45 * len(keys)), 3 + 0.3 * len(picture["target"])),
        gridspec_kw={"height_ratios": [1.5, max(1, len(picture["target"]) / 6)]}, sharex=True,
        layout="constrained")
    for i in real:  # edges from each node to its children (the largest spans inside it)
        s, e = spans[i]
        inner = [k for k in real if k != i and s <= spans[k][0] and spans[k][1] <= e]
        children = [k for k in inner if not any(
            o != k and spans[o][0] <= spans[k][0] and spans[k][1] <= spans[o][1] for o in inner)]
        covered = {j for k in children for j in range(*spans[k])}
        ends = [(column[n + k], height[k]) for k in children]
        ends += [(column[j], 0) for j in range(s, e) if j not in covered]
        for x, y in ends:
            top.plot([column[n + i], x], [height[i], y], color="0.6", linewidth=0.8)
    for key in keys:
        x = column[key]
        if key < n:
            top.text(x, 0, leaves[key], ha="center", va="top", rotation=90, fontsize=8)
        else:
            top.text(x, height[key - n], picture["labels"][key - n], ha="center", va="center",
                     fontsize=8, bbox={"boxstyle": "round", "fc": "white", "ec": "0.5"})
    top.set_ylim(-2.5, max(height.values(), default=0) + 0.8)
    top.axis("off")
    image = bottom.imshow(attention, aspect="auto", cmap="viridis", interpolation="nearest")
    bottom.set_yticks(range(len(picture["target"])), picture["target"], fontsize=8)
    bottom.set_xticks(range(len(keys)), [leaves[k] if k < n else picture["labels"][k - n]
                                         for k in keys], rotation=90, fontsize=8)
    bottom.set_ylabel("target token")
    # beside both panels, so that the tree keeps the heat map's width and its columns
    fig.colorbar(image, ax=[top, bottom], fraction=0.03, label="attention")
    fig.suptitle("cross-attention over the source tree (words and nodes)")
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_layers(result: dict, path: str):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axis = plt.subplots(figsize=(6, 3.5))
    width = 0.38
    for offset, kind, title in ((-width / 2, "decoder", "target -> source"),
                                (width / 2, "encoder", "source nodes -> source")):
        if result[kind] is None:
            continue
        rows = result[kind]["per_layer"]
        axis.bar([row["layer"] + offset for row in rows], [row["nodes"] for row in rows],
                 width, label=title)
    axis.axhline(result["constituents"]["nodes"], color="0.3", linestyle="--", linewidth=1,
                 label="nodes among constituents")
    layers = [row["layer"] for kind in ("decoder", "encoder") if result[kind]
              for row in result[kind]["per_layer"]]
    axis.set_xticks(sorted(set(layers)))
    axis.set_xlabel("layer")
    axis.set_ylabel("attention on nodes (%)")
    axis.set_ylim(0, 100)
    axis.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------
# Command line


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("data", help="the data-bin the model was trained on")
    parser.add_argument("--path", required=True, help="the tree2seq checkpoint")
    parser.add_argument("--gen-subset", default="test", help="the split to read (default test)")
    parser.add_argument("--max-tokens", type=int, default=4096)
    parser.add_argument("--max-sentences", type=int, metavar="N",
                        help="only the first N sentences of the split")
    parser.add_argument("--json", metavar="FILE", help="write the result here too")
    parser.add_argument("--plot", metavar="DIR", help="write the pictures (PNG) into DIR")
    parser.add_argument("--sentence", type=int, default=0,
                        help="the sentence (index in the split) of the attention picture")
    parser.add_argument("--plot-layer", type=int, metavar="L",
                        help="the picture shows decoder layer L (1-based); default the mean")
    return parser


def load(data: str, path: str, trees_only: bool = True):
    """The checkpoint's model and task over ``data``; with ``trees_only``, an error unless it
    is a tree2seq model reading trees."""
    import fairseq_tree  # noqa: F401  (registers the task and models)
    from fairseq import checkpoint_utils

    if not os.path.isfile(path):
        raise CliError(f"{path}: no such checkpoint")
    models, _cfg, task = checkpoint_utils.load_model_ensemble_and_task(
        [path], arg_overrides={"data": data})
    model = models[0]
    if trees_only and (getattr(task.cfg, "tree_input", "tree") != "tree"
                       or not hasattr(model.encoder, "embed_units")):
        raise CliError(f"{path}: not a tree2seq model reading trees (nothing to analyze)")
    return model, task


def main(args):
    model, task = load(args.data, args.path)
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise CliError("--plot needs matplotlib: pip install matplotlib") from None
    result = analyze(model, task, args.gen_subset, args.max_tokens, args.max_sentences)
    result.update(checkpoint=args.path, data=args.data)
    print("\n".join(table(result)), flush=True)
    if args.json:
        with open_output(args.json) as sink:
            sink.write(json.dumps(result, indent=2).encode("utf-8") + b"\n")
    if args.plot:
        os.makedirs(args.plot, exist_ok=True)
        layer = None if args.plot_layer is None else args.plot_layer - 1
        picture = sentence_attention(model, task, args.gen_subset, args.sentence, layer)
        sentence_png = os.path.join(args.plot, f"attention-{args.gen_subset}-{args.sentence}.png")
        plot_sentence(picture, sentence_png)
        layers_png = os.path.join(args.plot, "node-share-per-layer.png")
        plot_layers(result, layers_png)
        logger.info(f"pictures: {sentence_png}, {layers_png}")


def cli_main(argv=None):
    run_console(PROG, get_parser(), main, argv)


if __name__ == "__main__":
    cli_main()
