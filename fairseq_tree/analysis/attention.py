"""Where a trained tree2seq model looks, phrases (nodes) or words (leaves), as the paper's Table 4
(Nguyen et al., ICLR 2020, Section 6): the attention probability on node keys, word keys and the
source EOS, of the decoder's tree cross-attention (Eqs. 21-24; every target token counts once)
and of the encoder's node queries (Eq. 17; leaf queries attend leaves only, Eq. 18), averaged
over heads, layers and the split's tokens, per layer and per node label; and the split's
constituents (words and nodes).

Choices the paper leaves open, made here: probability mass (not argmax counts); teacher forcing
on the references; heads and layers averaged with equal weight; EOS, a leaf key of the model,
reported apart from the words. The probabilities are the attentions' own: each is asked for its
per-head weights (``need_head_weights``, as fairseq's ``MultiheadAttention``) by a forward hook
(``AttentionRecorder``, which bench's questions use too). ``fairseq-tree-analyze`` is the
command line over it.
"""

import os
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import torch
from fairseq import checkpoint_utils
from torch import Tensor

from fairseq_tree.data.label_dictionary import symbol_label
from fairseq_tree.data.tree_paths import select_rows
from fairseq_tree.errors import FairseqTreeError

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


def sentence_attention(model, task, split: str, index: int, layer: Optional[int]) -> dict:
    """One sentence's source tree and its cross-attention (T x S, mean over heads and over the
    layers, or of ``layer``), teacher-forced."""
    dataset = task.dataset(split)
    if not 0 <= index < len(dataset):
        raise FairseqTreeError(f"--sentence {index}: {split} has sentences 0..{len(dataset) - 1}")
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
        raise FairseqTreeError(f"--plot-layer {layer + 1}: the decoder has no such layer")
    net, source, target = sample["net_input"], task.source_dictionary, task.target_dictionary
    names = label_names(source)
    return {"attention": torch.stack(captured).mean(dim=0),
            "leaves": [source[int(t)] for t in net["src_tokens"][0]],
            "labels": [names[int(x)] for x in net["src_node_labels"][0]],
            "spans": net["src_node_spans"][0].tolist(),
            "target": [target[int(t)] for t in sample["target"][0]]}


def load(data: str, path: str, trees_only: bool = True):
    """The checkpoint's model and task over ``data``; with ``trees_only``, an error unless it
    is a tree2seq model reading trees. (The task and models it names are fairseq's to build:
    importing this module registered them, as importing any module of the package does.)"""
    if not os.path.isfile(path):
        raise FairseqTreeError(f"{path}: no such checkpoint")
    models, _cfg, task = checkpoint_utils.load_model_ensemble_and_task(
        [path], arg_overrides={"data": data})
    model = models[0]
    if trees_only and (getattr(task.cfg, "tree_input", "tree") != "tree"
                       or not hasattr(model.encoder, "embed_units")):
        raise FairseqTreeError(f"{path}: not a tree2seq model reading trees (nothing to analyze)")
    return model, task
