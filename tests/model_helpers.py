"""Building tree2seq models and collated tree batches in-process, for the model tests."""

import argparse
import random

import torch
from fairseq.data import Dictionary
from fairseq.data.list_dataset import ListDataset
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

import fairseq_tree  # noqa: F401  (registers the model)
from fairseq_tree.data.label_dictionary import label_symbol
from fairseq_tree.data.tree_language_pair_dataset import TreeLanguagePairDataset
from fairseq_tree.data.tree_paths import select_rows
from fairseq_tree.modules import tree_attention
from tree_reference import random_spans

LABELS = ["S", "NP", "VP", "PP", "SBAR", "ADJP", "NN"]


def tree_dictionary(num_words: int = 40) -> Dictionary:
    """A joined dictionary of words and bracketed node labels, as fairseq-tree-preprocess makes."""
    dictionary = Dictionary()
    for i in range(num_words):
        dictionary.add_symbol(f"w{i}")
    for label in LABELS:
        dictionary.add_symbol(label_symbol(label))
    dictionary.finalize(padding_factor=1)
    return dictionary


class FakeTask:
    """What ``build_model`` reads of a task."""

    def __init__(self, dictionary):
        self.source_dictionary = self.target_dictionary = dictionary


def build_model(dictionary: Dictionary, arch: str = "tree2seq_tiny", **options):
    """A model of ``arch`` as fairseq-train builds it (architecture defaults, then options)."""
    args = argparse.Namespace(arch=arch, dropout=0.0, share_all_embeddings=True, **options)
    ARCH_CONFIG_REGISTRY[arch](args)
    return ARCH_MODEL_REGISTRY[arch].build_model(args, FakeTask(dictionary))


def random_examples(rng: random.Random, dictionary: Dictionary, count: int, max_leaves: int = 9):
    """``count`` random (leaf ids, label ids, spans, target ids) tuples with real-looking trees."""
    words = [dictionary.index(f"w{i}") for i in range(20)]
    labels = [dictionary.index(label_symbol(label)) for label in LABELS]
    examples = []
    for _ in range(count):
        n = rng.randint(1, max_leaves)
        spans = sorted(random_spans(rng, n, keep=rng.choice([0.6, 1.0])), key=lambda s: (s[0], -s[1]))
        examples.append((
            [rng.choice(words) for _ in range(n)] + [dictionary.eos()],
            [rng.choice(labels) for _ in spans],
            spans,
            [rng.choice(words) for _ in range(rng.randint(1, 8))] + [dictionary.eos()],
        ))
    return examples


def collate(examples, dictionary: Dictionary) -> dict:
    """One batch of ``examples``, collated by ``TreeLanguagePairDataset`` (left-padded sources,
    spans shifted into ``src_tokens`` columns), in the given order."""
    src = [torch.tensor(e[0]) for e in examples]
    labels = [torch.tensor(e[1], dtype=torch.long) for e in examples]
    spans = [torch.tensor(e[2], dtype=torch.long).view(-1) for e in examples]
    tgt = [torch.tensor(e[3]) for e in examples]
    dataset = TreeLanguagePairDataset(
        ListDataset(src, [len(s) for s in src]), [len(s) for s in src], dictionary,
        ListDataset(labels, [len(x) for x in labels]), ListDataset(spans, [len(x) for x in spans]),
        ListDataset(tgt, [len(t) for t in tgt]), [len(t) for t in tgt], dictionary, shuffle=False,
    )
    batch = dataset.collater([dataset[i] for i in range(len(examples))])
    order = batch["id"].argsort()  # fairseq's collate sorts by length; restore the given order
    net_input = {key: value.index_select(0, order) for key, value in batch["net_input"].items()
                 if key != "src_embedding_paths"}
    net_input["src_embedding_paths"] = select_rows(batch["net_input"]["src_embedding_paths"],
                                                   order)
    return {"net_input": net_input, "target": batch["target"].index_select(0, order),
            "id": batch["id"].index_select(0, order), "nsentences": len(examples),
            "ntokens": batch["ntokens"]}


def count_memory_builds(monkeypatch):
    """The rows of every cross-attention memory built, one entry a layer, whether a layer
    builds its own or the decoder builds all together (``tree_attention.source_memories``)."""
    calls = []
    build = tree_attention.source_memories

    def counted(attentions, tree):
        calls.extend(tree.spans.size(0) for _ in attentions)
        return build(attentions, tree)

    monkeypatch.setattr(tree_attention, "source_memories", counted)
    return calls
