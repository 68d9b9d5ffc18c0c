"""Properties every recursive tree encoder must have: an example gives the same states alone and
inside a padded batch, and a change to one leaf changes exactly the states of its ancestors."""

import random

import pytest
import torch

from fairseq_tree.modules.multi_branch_attention import RecursiveMultiBranchAttention
from fairseq_tree.modules.recursive_tree_attention import RecursiveTreeAttention
from recursive_reference import PAD, tree_batch

DIM, LABELS = 12, 10
ENCODERS = {
    "ctt": lambda: RecursiveMultiBranchAttention(DIM, branches=3, ffn_dim=5),
    "ctt-multi-head-pe": lambda: RecursiveMultiBranchAttention(
        DIM, attention="multi-head", branches=3, positional_encoding=True),
    "dtt": lambda: RecursiveMultiBranchAttention(DIM, dependency=True, branches=3, ffn_dim=5),
    "tree-attention": lambda: RecursiveTreeAttention(DIM, LABELS, PAD, 4, 6),
    "tree-attention-plain": lambda: RecursiveTreeAttention(
        DIM, LABELS, PAD, 4, 6, structured=False),
    "tree-attention-no-subword-nodes": lambda: RecursiveTreeAttention(
        DIM, LABELS, PAD, 4, 6, subword_nodes=False),
}


def encoder(name):
    torch.manual_seed(0)
    return ENCODERS[name]().double().eval()


def encode(module, batch, leaf_states):
    return module(leaf_states, batch["leaf_padding"], batch["spans"], batch["node_labels"],
                  batch["leaf_labels"], batch["heads"])


def alone(batch, b):
    """Row b of ``batch`` as a batch of one, without padding (its leaves and EOS only)."""
    columns = (~batch["leaf_padding"][b]).nonzero().flatten()
    first, last = int(columns[0]), int(columns[-1]) + 2  # through EOS
    real = batch["spans"][b, :, 0] < batch["spans"][b, :, 1]
    m = int(real.sum())
    heads = batch["heads"][b, first:last]
    return dict(
        spans=(batch["spans"][b, :m] - first).unsqueeze(0),
        leaf_padding=batch["leaf_padding"][b, first:last].unsqueeze(0),
        heads=torch.where(heads >= 0, heads - first, -1).unsqueeze(0),
        node_labels=batch["node_labels"][b, :m].unsqueeze(0),
        leaf_labels=batch["leaf_labels"][b, first:last].unsqueeze(0),
    ), slice(first, last), m


@pytest.mark.parametrize("name", ENCODERS)
def test_an_example_alone_equals_the_same_example_in_a_padded_batch(name):
    module, rng = encoder(name), random.Random(1)
    for left_pad in (False, True):
        batch = tree_batch(rng, [1, 9, 4, 12, 2], left_pad=left_pad, bos=left_pad,
                           num_labels=LABELS, untagged=0.5)
        leaf_states = torch.randn(*batch["leaf_padding"].shape, DIM, dtype=torch.float64)
        nodes, root = encode(module, batch, leaf_states)
        for b in range(5):
            single, columns, m = alone(batch, b)
            one_nodes, one_root = encode(module, single, leaf_states[b:b + 1, columns])
            torch.testing.assert_close(one_root[0], root[b], rtol=0, atol=1e-12)
            if getattr(module, "dependency", False):
                torch.testing.assert_close(one_nodes[0], nodes[b, columns], rtol=0, atol=1e-12)
            else:
                torch.testing.assert_close(one_nodes[0, :m], nodes[b, :m], rtol=0, atol=1e-12)


def ancestors(batch, b, j, dependency):
    """The nodes (constituency) or words (dependency) whose state depends on leaf j of row b."""
    if dependency:
        chain, word = [], j
        while word >= 0:
            chain.append(word)
            word = int(batch["heads"][b, word])
        return set(chain)
    spans = batch["spans"][b]
    return {i for i in range(spans.size(0)) if spans[i, 0] <= j < spans[i, 1]}


@pytest.mark.parametrize("name", ENCODERS)
def test_a_leaf_changes_only_its_ancestors(name):
    module, rng = encoder(name), random.Random(2)
    dependency = getattr(module, "dependency", False)
    batch = tree_batch(rng, [11, 6, 1, 12], num_labels=LABELS, untagged=0.5)
    leaf_states = torch.randn(*batch["leaf_padding"].shape, DIM, dtype=torch.float64)
    nodes, root = encode(module, batch, leaf_states)
    for b, j in [(0, 0), (0, 5), (1, 5), (2, 0), (3, 11), (3, 3)]:
        changed_states = leaf_states.clone()
        changed_states[b, j] += torch.randn(DIM, dtype=torch.float64)
        new_nodes, new_root = encode(module, batch, changed_states)
        differs = (new_nodes != nodes).any(-1)
        expected = torch.zeros_like(differs)
        expected[b, sorted(ancestors(batch, b, j, dependency))] = True
        assert differs.tolist() == expected.tolist(), (b, j)
        assert (new_root != root).any(-1).tolist() == [row == b for row in range(4)]
