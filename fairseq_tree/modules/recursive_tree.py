"""Bottom-up recursion over the trees of a batch, one tree height at a time, through a
``RecursionPlan`` (``recursion_plan``): one composition step per height for the whole batch
(gather the children's states, compose, scatter the parents), so the cost grows with the tree
height, not with the number of nodes, and no loop runs over sentences or nodes."""

from typing import Callable, NamedTuple

import torch
from torch import Tensor

from fairseq_tree.modules.recursion_plan import RecursionLevel, RecursionPlan


class RecursiveOutput(NamedTuple):
    nodes: Tensor  # B x M x C, each node's state; 0 at padded nodes
    root: Tensor  # B x C, the root's state: the sentence


def recurse(plan: RecursionPlan, leaf_states: Tensor,
            compose: Callable[[Tensor, RecursionLevel], Tensor]) -> RecursiveOutput:
    """Run ``compose`` bottom-up over the trees of ``plan``.

    Args:
        leaf_states: B x N x C, the state of each leaf column.
        compose: (children's states K x F x C, level) -> K x C, the states of the level's
            nodes; rows of padded children are 0 and must not reach the result
            (``level.child_mask``).
    Returns:
        the node states (B x M x C; 0 at padded nodes) and the root states (B x C).
    """
    batch, num_leaves, dim = leaf_states.shape
    table = torch.cat([leaf_states.reshape(batch * num_leaves, dim),
                       leaf_states.new_zeros(plan.table_rows - plan.leaf_rows, dim)])
    for level in plan.levels:
        composed = compose(table[level.children], level)
        # In place: gathering rows saves only their indices for backward, never the table.
        table.index_copy_(0, level.nodes, composed.to(table.dtype))
    return RecursiveOutput(table[plan.node_rows], table[plan.root_rows])


def masked_softmax(scores: Tensor, mask: Tensor) -> Tensor:
    """Softmax over the last axis where ``mask`` (same shape, bool) holds; 0 elsewhere."""
    scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)


def sinusoidal_encoding(positions: Tensor, dim: int, dtype=torch.float32) -> Tensor:
    """Recursive Tree Attention, Eqs. 6-7 (the Transformer's encoding, Vaswani et al. 2017):
    P(pos, 2i) = sin(pos / 10000^(2i/d)), P(pos, 2i+1) = cos(pos / 10000^(2i/d)).

    Args:
        positions: any shape ``S``, integer or float positions.
    Returns:
        S x dim.
    """
    pair = torch.arange(0, dim, 2, device=positions.device, dtype=torch.float64)
    angle = positions.to(torch.float64).unsqueeze(-1) / torch.pow(10000.0, pair / dim)
    encoding = torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(-2)[..., :dim]
    return encoding.to(dtype)
