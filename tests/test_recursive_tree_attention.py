"""Recursive Tree Attention (Eq. 5) and its ablations against a literal per-tree recursion."""

import random

import pytest
import torch

from fairseq_tree.modules.recursive_tree_attention import RecursiveTreeAttention
from recursive_reference import (
    PAD,
    constituency_children,
    literal_recursion,
    literal_tree_attention_node,
    tree_batch,
)

DIM, LABELS = 10, 12
ABLATIONS = {
    "full": dict(),
    "plain": dict(structured=False),
    "no-positions": dict(positions=False),
    "no-labels": dict(labels=False),
    "no-subword-nodes": dict(subword_nodes=False),
    "plain-no-subword-nodes": dict(structured=False, subword_nodes=False),
}


def small_module(**ablation):
    torch.manual_seed(0)
    module = RecursiveTreeAttention(DIM, LABELS, PAD, label_dim=6, attention_dim=8, **ablation)
    for parameter in module.parameters():
        parameter.data.add_(0.1 * torch.randn_like(parameter))
    return module.double()


def structural_parent(spans, b, j):
    """The smallest real span of row b holding leaf column j, or None."""
    holding = [i for i in range(spans.size(1)) if spans[b, i, 0] <= j < spans[b, i, 1]]
    return min(holding, key=lambda i: int(spans[b, i, 1] - spans[b, i, 0]), default=None)


def literal_label(module, batch, b, kind, k, tagged):
    """L of a child: a node's label; a tagged leaf's tag; an untagged leaf's X_SW."""
    if kind == "node":
        return module.label_embedding.weight[batch["node_labels"][b, k]]
    if tagged:
        return module.label_embedding.weight[batch["leaf_labels"][b, k]]
    parent = structural_parent(batch["spans"], b, k)
    label = module.label_padding_idx if parent is None else batch["node_labels"][b, parent]
    return module.subword_label_embedding.weight[label]


def literal_tree_attention(module, batch, leaf_states, leaf_labels=True):
    spans, padding = batch["spans"], batch["leaf_padding"]

    def children_of(b):
        children, root = constituency_children(spans, padding, b)
        if not module.structured:  # every node over the leaves of its span
            children = {i: [("leaf", j) for j in range(*spans[b, i].tolist())] for i in children}
        return children, root

    def compose(b, i, kids, states):
        start_of = lambda kind, k: int(spans[b, k, 0]) if kind == "node" else k  # noqa: E731
        offsets = [start_of(*kid) - int(spans[b, i, 0]) for kid in kids]
        tagged = [kind == "leaf" and leaf_labels
                  and batch["leaf_labels"][b, k] != module.label_padding_idx for kind, k in kids]
        split_word = all(kind == "leaf" and not t for (kind, _), t in zip(kids, tagged))
        labels = ([literal_label(module, batch, b, *kid, t) for kid, t in zip(kids, tagged)]
                  if module.labels else [None] * len(kids))
        return literal_tree_attention_node(module, batch["node_labels"][b, i], states, offsets,
                                           labels, split_word)

    return literal_recursion(leaf_states, children_of, spans.size(1), compose)


def random_batches(seed, count=30):
    rng = random.Random(seed)
    for _ in range(count):
        sizes = [rng.choice([1, 2, rng.randint(1, 12)]) for _ in range(rng.randint(1, 5))]
        yield tree_batch(rng, sizes, left_pad=rng.random() < 0.5, bos=rng.random() < 0.3,
                         num_labels=LABELS, untagged=rng.choice([0.2, 0.6]))


def run(module, batch, leaf_states, leaf_labels=True):
    return module(leaf_states, batch["leaf_padding"], batch["spans"], batch["node_labels"],
                  batch["leaf_labels"] if leaf_labels else None)


@pytest.mark.parametrize("ablation", ABLATIONS.values(), ids=ABLATIONS.keys())
def test_batched_tree_attention_equals_literal_recursion(ablation):
    module = small_module(**ablation)
    checked = split_words = 0
    for batch in random_batches(seed=list(ABLATIONS.values()).index(ablation)):
        leaf_states = torch.randn(*batch["leaf_padding"].shape, DIM, dtype=torch.float64)
        nodes, root = run(module, batch, leaf_states)
        literal_nodes, literal_root = literal_tree_attention(module, batch, leaf_states)
        torch.testing.assert_close(nodes, literal_nodes, rtol=0, atol=1e-10)
        torch.testing.assert_close(root, literal_root, rtol=0, atol=1e-10)
        checked += int((nodes != 0).any(-1).sum())
        spans, tags = batch["spans"], batch["leaf_labels"]
        split_words += sum(bool((tags[b, slice(*spans[b, i])] == PAD).all())
                           for b, i in (spans[..., 0] < spans[..., 1]).nonzero())
    assert checked > 150 and split_words > 10


@pytest.mark.parametrize("ablation", ABLATIONS.values(), ids=ABLATIONS.keys())
def test_deep_chains_and_wide_nodes_equal_literal_recursion(ablation):
    """Past the random batches' 12 leaves: chains of 39 and 32 nodes, a node of 40 children."""
    module = small_module(**ablation)
    batch = tree_batch(random.Random(11), [40, 40, 33, 3], left_pad=True, bos=True,
                       num_labels=LABELS, shapes=["right-chain", "wide", "left-chain", None])
    leaf_states = torch.randn(*batch["leaf_padding"].shape, DIM, dtype=torch.float64)
    nodes, root = run(module, batch, leaf_states)
    literal_nodes, literal_root = literal_tree_attention(module, batch, leaf_states)
    torch.testing.assert_close(nodes, literal_nodes, rtol=0, atol=1e-10)
    torch.testing.assert_close(root, literal_root, rtol=0, atol=1e-10)


def test_without_leaf_labels_every_leaf_is_a_subword_piece():
    module = small_module()
    for batch in random_batches(seed=11, count=10):
        leaf_states = torch.randn(*batch["leaf_padding"].shape, DIM, dtype=torch.float64)
        nodes, root = run(module, batch, leaf_states, leaf_labels=False)
        literal_nodes, literal_root = literal_tree_attention(module, batch, leaf_states, False)
        torch.testing.assert_close(nodes, literal_nodes, rtol=0, atol=1e-10)
        torch.testing.assert_close(root, literal_root, rtol=0, atol=1e-10)


def test_the_subword_ablation_needs_leaf_labels():
    batch = next(random_batches(seed=1))
    with pytest.raises(ValueError, match="needs leaf labels"):
        run(small_module(subword_nodes=False), batch,
            torch.zeros(*batch["leaf_padding"].shape, DIM, dtype=torch.float64), leaf_labels=False)


def test_tree_attention_gradients_equal_the_literal_ones():
    module = small_module()
    batch = next(random_batches(seed=5))
    leaf_states = torch.randn(*batch["leaf_padding"].shape, DIM, dtype=torch.float64,
                              requires_grad=True)
    grads = []
    for forward in (run, literal_tree_attention):
        module.zero_grad()
        leaf_states.grad = None
        nodes, root = forward(module, batch, leaf_states)
        (nodes.square().sum() + root.sin().sum()).backward()
        grads.append([leaf_states.grad] + [p.grad for p in module.parameters()])
    for fast, literal in zip(*grads):
        torch.testing.assert_close(fast, literal, rtol=0, atol=1e-9)


@pytest.mark.parametrize("ablation", ABLATIONS.values(), ids=ABLATIONS.keys())
def test_tree_attention_gradients_reach_every_parameter(ablation):
    module = small_module(**ablation)
    batch = tree_batch(random.Random(4), [7, 9, 1, 4], num_labels=LABELS, untagged=0.4)
    nodes, root = run(module, batch, torch.randn(4, 10, DIM, dtype=torch.float64))
    (root.square().sum() + nodes.sum()).backward()
    for name, parameter in module.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name
        assert torch.isfinite(parameter.grad).all(), name
