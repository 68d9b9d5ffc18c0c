"""The batched bottom-up recursion (plans, driver) and Ahmed et al.'s recursive multi-branch
attention against literal per-tree recursions (tests/recursive_reference.py)."""

import random
from functools import partial

import pytest
import torch

from fairseq_tree.modules.multi_branch_attention import RecursiveMultiBranchAttention
from fairseq_tree.modules.recursion_plan import (
    flat_plan_from_spans,
    plan_from_heads,
    plan_from_spans,
)
from fairseq_tree.modules.recursive_tree import recurse
from recursive_reference import (
    constituency_children,
    dependency_children,
    literal_multi_branch_composition,
    literal_recursion,
    tree_batch,
)

# (S (NP a b) (VP c (NP d e))) then EOS; a one-leaf tree ("x", EOS, padding).
SPANS = torch.tensor([[[0, 5], [0, 2], [2, 5], [3, 5]], [[0, 0]] * 4])
PADDING = torch.tensor([[0, 0, 0, 0, 0, 1], [0, 1, 1, 1, 1, 1]], dtype=torch.bool)


def test_plan_of_a_known_tree():
    plan = plan_from_spans(SPANS, PADDING)
    assert plan.leaf_parent.tolist() == [[1, 1, 2, 3, 3, -1], [-1] * 6]
    assert plan.node_parent.tolist() == [[-1, 0, 0, 2], [-1] * 4]
    assert plan.height.tolist() == [[3, 1, 2, 1], [0] * 4]
    node = lambda b, i: 12 + 4 * b + i  # noqa: E731 (table row of node i of row b)
    assert [level.nodes.tolist() for level in plan.levels] == [
        [node(0, 1), node(0, 3)], [node(0, 2)], [node(0, 0)]]
    assert plan.levels[1].children.tolist() == [[2, node(0, 3)]]  # leaf c, then NP
    assert plan.levels[2].child_offset.tolist() == [[0, 2]]  # pos(x) = start(x) - start(parent)
    assert plan.root_rows.tolist() == [node(0, 0), 6]  # the one-leaf tree's root is its leaf
    assert plan.node_rows[1].tolist() == [plan.padding_row] * 4


def test_one_step_per_height_for_the_whole_batch():
    """Cost grows with height: a wide tree of 40 leaves is one step, a chain of 6 leaves five,
    and a batch holding both takes five steps, whatever its number of nodes."""
    wide = torch.tensor([[[0, 40]]])
    chain = torch.tensor([[[i, 6] for i in range(5)]])
    pad = lambda n, width: torch.arange(width).unsqueeze(0) >= n  # noqa: E731
    assert len(plan_from_spans(wide, pad(40, 41)).levels) == 1
    assert plan_from_spans(wide, pad(40, 41)).levels[0].children.shape == (1, 40)
    assert len(plan_from_spans(chain, pad(6, 7)).levels) == 5
    both = torch.zeros(2, 5, 2, dtype=torch.long)
    both[0, :1], both[1] = wide[0], chain[0]
    plan = plan_from_spans(both, torch.cat([pad(40, 41), pad(6, 41)]))
    calls = []
    recurse(plan, torch.randn(2, 41, 3),
            lambda rows, level: calls.append(rows.shape) or rows.sum(1))
    assert len(calls) == 5 and calls[0] == (2, 40, 3)  # height 1: the wide root, the chain's end


def test_a_batch_of_one_leaf_trees_has_no_steps():
    spans = torch.zeros(3, 0, 2, dtype=torch.long)
    padding = torch.tensor([[0, 1], [0, 1], [1, 0]], dtype=torch.bool)
    out = recurse(plan_from_spans(spans, padding), torch.arange(6.0).view(3, 2, 1), None)
    assert out.nodes.shape == (3, 0, 1) and out.root.flatten().tolist() == [0.0, 2.0, 5.0]


def test_flat_plan_reads_each_span_directly():
    plan = flat_plan_from_spans(SPANS, PADDING)
    assert len(plan.levels) == 1
    assert plan.levels[0].child_mask.sum(1).tolist() == [5, 2, 3, 2]
    assert plan.levels[0].child_offset[2].tolist() == [0, 1, 2, 0, 0]


def test_dependency_plan_puts_the_word_before_its_dependents():
    heads = torch.tensor([[1, -1, 1, 4, 1, -1]])  # a <- b -> c, e -> d, b -> e
    plan = plan_from_heads(heads, PADDING[:1])
    assert plan.height.tolist() == [[0, 2, 0, 0, 1, 0]]
    assert [level.children.tolist() for level in plan.levels] == [[[4, 3]], [[1, 0, 2, 6 + 4]]]
    assert plan.node_rows.tolist() == [[0, 7, 2, 3, 10, 12]] and plan.root_rows.tolist() == [7]


@pytest.mark.parametrize("spans, padding", [
    (torch.tensor([[[0, 5], [0, 2], [1, 3]]]), PADDING[:1]),  # crossing spans
    (torch.tensor([[[0, 5], [0, 2], [0, 2]]]), PADDING[:1]),  # twin spans
    (torch.tensor([[[0, 2], [0, 5]]]), PADDING[:1]),  # node 0 is not the root
    (torch.tensor([[[0, 4]]]), PADDING[:1]),  # the root misses a leaf
    (torch.tensor([[[0, 6]]]), PADDING[:1]),  # the root covers EOS
    (torch.zeros(1, 1, 2, dtype=torch.long), PADDING[:1]),  # no node over five leaves
])
def test_spans_that_are_no_tree_are_rejected(spans, padding):
    with pytest.raises(ValueError, match="batch row 0: the spans do not form one tree "):
        plan_from_spans(spans, padding)


@pytest.mark.parametrize("heads", [[1, -1, 1, 4, -1, -1], [1, 2, 0, 4, 1, -1],
                                   [1, -1, 1, 4, 5, -1], [1, -1, 1, 9, 1, -1]],
                         ids=["two-roots", "cycle", "head-on-padding", "out-of-range"])
def test_heads_that_are_no_tree_are_rejected(heads):
    with pytest.raises(ValueError, match="batch row 0: the heads do not form one dependency tree"):
        plan_from_heads(torch.tensor([heads]), PADDING[:1])


CONFIGS = [
    dict(attention="multi-branch"),
    dict(attention="multi-branch", positional_encoding=True),
    dict(attention="multi-head"),
    dict(attention="single-head", positional_encoding=True),
]
CONFIG_IDS = ["branch", "branch-pe", "multi-head", "single-head-pe"]


def small_module(dependency=False, **config):
    torch.manual_seed(0)
    module = RecursiveMultiBranchAttention(12, dependency=dependency, branches=3, ffn_dim=7,
                                           **config)
    for parameter in module.parameters():  # away from the initial values (kappa = alpha = 1/n)
        parameter.data.add_(0.1 * torch.randn_like(parameter))
    return module.double().eval()


def random_batches(seed, count=30):
    rng = random.Random(seed)
    for _ in range(count):
        sizes = [rng.choice([1, 2, rng.randint(1, 12)]) for _ in range(rng.randint(1, 5))]
        yield tree_batch(rng, sizes, left_pad=rng.random() < 0.5, bos=rng.random() < 0.3)


def literal_multi_branch(module, batch, leaf_states):
    if module.dependency:
        children_of = partial(dependency_children, batch["heads"], batch["leaf_padding"])
        width = leaf_states.size(1)
    else:
        children_of = partial(constituency_children, batch["spans"], batch["leaf_padding"])
        width = batch["spans"].size(1)

    def compose(b, i, kids, states):
        return literal_multi_branch_composition(module.composition, states)

    nodes, root = literal_recursion(leaf_states, children_of, width, compose)
    if module.dependency:  # every word's state: its node, or its leaf without dependents
        words = ~batch["leaf_padding"]
        composed = (nodes != 0).any(-1, keepdim=True)
        nodes = torch.where(composed, nodes, leaf_states * words.unsqueeze(-1))
    return nodes, root


def run(module, batch, leaf_states):
    return module(leaf_states, batch["leaf_padding"], batch["spans"], heads=batch["heads"])


@pytest.mark.parametrize("dependency", [False, True], ids=["ctt", "dtt"])
@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
def test_batched_multi_branch_equals_literal_recursion(config, dependency):
    module = small_module(dependency, **config)
    checked = 0
    for batch in random_batches(seed=len(CONFIG_IDS) * dependency + CONFIGS.index(config)):
        leaf_states = torch.randn(*batch["leaf_padding"].shape, 12, dtype=torch.float64)
        nodes, root = run(module, batch, leaf_states)
        literal_nodes, literal_root = literal_multi_branch(module, batch, leaf_states)
        torch.testing.assert_close(nodes, literal_nodes, rtol=0, atol=1e-10)
        torch.testing.assert_close(root, literal_root, rtol=0, atol=1e-10)
        checked += int((nodes != 0).any(-1).sum())
    assert checked > 150


DEEP_AND_WIDE = dict(sizes=[40, 40, 33, 3], shapes=["right-chain", "wide", "left-chain", None])


@pytest.mark.parametrize("dependency", [False, True], ids=["ctt", "dtt"])
@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
def test_deep_chains_and_wide_nodes_equal_literal_recursion(config, dependency):
    """Past the random batches' 12 leaves: chains of 39 and 32 nodes, a node of 40 children."""
    module = small_module(dependency, **config)
    batch = tree_batch(random.Random(11), **DEEP_AND_WIDE, left_pad=True, bos=True)
    leaf_states = torch.randn(*batch["leaf_padding"].shape, 12, dtype=torch.float64)
    nodes, root = run(module, batch, leaf_states)
    literal_nodes, literal_root = literal_multi_branch(module, batch, leaf_states)
    torch.testing.assert_close(nodes, literal_nodes, rtol=0, atol=1e-10)
    torch.testing.assert_close(root, literal_root, rtol=0, atol=1e-10)
    assert int((batch["spans"][..., 0] < batch["spans"][..., 1]).sum()) >= 39 + 1 + 32


@pytest.mark.parametrize("dependency", [False, True], ids=["ctt", "dtt"])
def test_multi_branch_gradients_equal_the_literal_ones(dependency):
    module = small_module(dependency)
    batch = next(random_batches(seed=7))
    leaf_states = torch.randn(*batch["leaf_padding"].shape, 12, dtype=torch.float64,
                              requires_grad=True)
    grads = []
    for forward in (run, literal_multi_branch):
        module.zero_grad()
        leaf_states.grad = None
        nodes, root = forward(module, batch, leaf_states)
        (nodes.square().sum() + root.sin().sum()).backward()
        grads.append([leaf_states.grad] + [p.grad for p in module.parameters()])
    for fast, literal in zip(*grads):
        torch.testing.assert_close(fast, literal, rtol=0, atol=1e-9)


@pytest.mark.parametrize("dependency", [False, True], ids=["ctt", "dtt"])
@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
def test_multi_branch_gradients_reach_every_parameter(config, dependency):
    module = small_module(dependency, **config).train()
    batch = tree_batch(random.Random(3), [7, 9, 1, 4])
    nodes, root = run(module, batch, torch.randn(4, 10, 12, dtype=torch.float64))
    (root.square().sum() + nodes.sum()).backward()
    for name, parameter in module.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name
        assert torch.isfinite(parameter.grad).all(), name
