"""The fast hierarchical accumulation against a literal implementation of Eqs. 5-10."""

import random

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from fairseq_tree.modules.hierarchical_accumulation import (
    accumulate,
    build_accumulation_plan,
    hierarchical_accumulation,
)
from tree_reference import literal_accumulation, padded_batch, random_spans

from bench.lib.dense_reference import dense_accumulation


def random_case(rng: random.Random, d: int = 4, rows=None):
    """A padded batch of random trees (nodes in random order, padded nodes anywhere), with
    random leaf and node values, weights and embedding tables of ``rows`` rows."""
    n = rng.randint(1, 12)
    trees = [random_spans(rng, rng.randint(1, n), rng.choice([0.3, 0.7, 1.0]))
             for _ in range(rng.randint(1, 4))]
    spans = padded_batch(rng, trees, n, extra_pads=rng.randint(0, 2))
    batch, m = spans.shape[:2]
    rows = rows or rng.choice([2, 3, 5, 100])
    return dict(
        leaves=torch.randn(batch, n, d, dtype=torch.float64),
        nodes=torch.randn(batch, m, d, dtype=torch.float64),
        spans=spans,
        leaf_weights=torch.randn(batch, n, dtype=torch.float64),
        vertical=torch.randn(rows, d // 2, dtype=torch.float64),
        horizontal=torch.randn(rows, d // 2, dtype=torch.float64),
    )


@pytest.mark.parametrize("embeddings", [False, True], ids=["eq8", "eq10"])
def test_fast_accumulation_equals_literal_equations(embeddings):
    rng = random.Random(1 + embeddings)
    torch.manual_seed(0)
    checked_nodes = 0
    for _ in range(150):
        case = random_case(rng)
        if not embeddings:
            case["vertical"] = case["horizontal"] = None
        fast = hierarchical_accumulation(**case)
        literal = literal_accumulation(**case)
        assert fast.shape == literal.shape
        torch.testing.assert_close(fast, literal, rtol=0, atol=1e-9)
        checked_nodes += int((case["spans"][..., 0] < case["spans"][..., 1]).sum())
    assert checked_nodes > 1000


def test_deep_chains_clip_to_the_last_embedding_row():
    """A right-branching chain deeper and wider than the embedding tables."""
    n, d = 12, 6
    spans = torch.tensor([[[i, n] for i in range(n - 1)]])  # [0,12) > [1,12) > ... > [10,12)
    args = dict(leaves=torch.randn(1, n, d, dtype=torch.float64),
                nodes=torch.randn(1, n - 1, d, dtype=torch.float64), spans=spans,
                leaf_weights=torch.rand(1, n, dtype=torch.float64),
                vertical=torch.randn(4, d // 2, dtype=torch.float64),
                horizontal=torch.randn(3, d // 2, dtype=torch.float64))
    torch.testing.assert_close(hierarchical_accumulation(**args), literal_accumulation(**args),
                               rtol=0, atol=1e-9)


def test_padded_nodes_are_zero_and_padded_leaf_weights_are_ignored():
    rng = random.Random(3)
    case = random_case(rng, rows=10)
    while bool((case["spans"][..., 0] < case["spans"][..., 1]).all()):
        case = random_case(rng, rows=10)
    spans = case["spans"]
    covered = torch.zeros(case["leaf_weights"].shape, dtype=torch.bool)
    for b, i in (spans[..., 0] < spans[..., 1]).nonzero().tolist():
        covered[b, spans[b, i, 0]:spans[b, i, 1]] = True
    expected = hierarchical_accumulation(**case)
    case["leaf_weights"] = case["leaf_weights"].masked_fill(~covered, float("nan"))
    out = hierarchical_accumulation(**case)
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
    padded = spans[..., 0] >= spans[..., 1]
    assert bool(padded.any()) and bool((out[padded] == 0).all())


def test_embeddings_are_shared_across_heads():
    """With d = heads * e, each e-wide head slice accumulates exactly as a single head would."""
    rng = random.Random(4)
    heads, width = 3, 4
    case = random_case(rng, d=heads * width, rows=6)
    vertical, horizontal = torch.randn(6, width // 2).double(), torch.randn(6, width // 2).double()
    plan = build_accumulation_plan(case["spans"], case["leaves"].size(1), (6, 6), torch.float64)
    shared = accumulate(plan, case["leaves"], case["nodes"], case["leaf_weights"], vertical, horizontal)
    for h in range(heads):
        part = slice(h * width, (h + 1) * width)
        single = hierarchical_accumulation(case["leaves"][..., part], case["nodes"][..., part],
                                           case["spans"], case["leaf_weights"], vertical, horizontal)
        torch.testing.assert_close(shared[..., part], single, rtol=0, atol=1e-12)


def test_gradients_match_finite_differences():
    rng = random.Random(5)
    case = random_case(rng, d=4, rows=4)
    inputs = [name for name in ("leaves", "nodes", "leaf_weights", "vertical", "horizontal")]
    tensors = [case[name].requires_grad_() for name in inputs]

    def function(*values):
        return hierarchical_accumulation(**{**case, **dict(zip(inputs, values))})

    assert torch.autograd.gradcheck(function, tensors)


class LargestTensor(TorchDispatchMode):
    """Records the largest number of elements of any tensor an operation produces."""

    largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for value in out if isinstance(out, (tuple, list)) else [out]:
            if isinstance(value, torch.Tensor):
                self.largest = max(self.largest, value.numel())
        return out


def largest_tensor_of(accumulation, seed=6, batch=4, n=40, d=64):
    """The largest tensor built by ``accumulation`` (forward and backward), and B * m * n * d."""
    rng = random.Random(seed)
    trees = [random_spans(rng, n, 1.0) for _ in range(batch)]
    spans = padded_batch(rng, trees, n, extra_pads=0)
    m = spans.size(1)
    leaves = torch.randn(batch, n, d, requires_grad=True)
    nodes = torch.randn(batch, m, d, requires_grad=True)
    weights = torch.randn(batch, n, requires_grad=True)
    table = torch.randn(100, d // 2, requires_grad=True)
    with LargestTensor() as tracker:
        accumulation(leaves, nodes, spans, weights, table, table).sum().backward()
    assert m > 20
    return tracker.largest, batch * m * n * d


def test_no_tensor_of_size_batch_nodes_leaves_dim():
    """The (m+1) x n x d tensor S of the paper is never built, in forward or backward; the dense
    reference that builds it shows what the measurement catches."""
    largest, size_of_s = largest_tensor_of(hierarchical_accumulation)
    assert 0 < largest < size_of_s / 8
    largest, size_of_s = largest_tensor_of(dense_accumulation)
    assert largest >= size_of_s


def test_dense_reference_equals_literal_equations():
    """The benchmark's baseline computes the same thing."""
    rng = random.Random(7)
    for _ in range(40):
        case = random_case(rng)
        torch.testing.assert_close(dense_accumulation(**case), literal_accumulation(**case),
                                   rtol=0, atol=1e-9)
