"""The right frontier of a tree, and an attention over it for a classification head to read.

A prefix's next word attaches somewhere on the right frontier of the prefix's tree: the nodes
whose span ends at its last word (the root among them) and that word. A head that reads the
root alone reads the root clause: right where the next verb continues it ("the author near the
senators laughed and": the root's subject), wrong where the last clause is embedded ("Delilah
took new ropes, and said to him, The Philistines": the root's subject is Delilah). An attention
over the frontier lets the model choose the constituent, the root being one of them.

This is the plugin's own choice (no paper here reads a frontier); the attention is Bahdanau's
additive form, e_j = v^T tanh(W u_j + b) with a learned query as Recursive Tree Attention's, or
e_j = v^T tanh(W u_j + U q + b) with a query q, the root's state: a unit's state holds its own
span only, and the root's says which constituent the prefix continues.
"""

from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def right_frontier_mask(src_tokens: Tensor, node_spans: Tensor, roots: Tensor, padding_idx: int,
                        eos_idx: int) -> Tensor:
    """B x (N+M) over [leaves; nodes]: True at each tree's last word, at each node whose
    ``[start, end)`` span ends after it, and at its root column ``roots`` (B,), so that a tree
    without words still has one unit to read."""
    batch, num_leaves = src_tokens.shape
    columns = torch.arange(num_leaves, device=src_tokens.device).expand(batch, num_leaves)
    words = src_tokens.ne(padding_idx) & src_tokens.ne(eos_idx)
    last = torch.where(words, columns, torch.full_like(columns, -1)).max(dim=1).values  # B
    leaves = columns.eq(last.unsqueeze(1)) & words
    real = node_spans[..., 0] < node_spans[..., 1]
    nodes = real & node_spans[..., 1].eq(last.unsqueeze(1) + 1)
    mask = torch.cat([leaves, nodes], dim=1)
    mask[torch.arange(batch, device=mask.device), roots] = True
    return mask


class RightFrontierAttention(nn.Module):
    """One state per tree from its units' states: an additive attention over the units of its
    right frontier (``right_frontier_mask``), with a query of ``query_dim`` where it has one."""

    def __init__(self, embed_dim: int, attention_dim: int, query_dim: Optional[int] = None):
        super().__init__()
        self.project = nn.Linear(embed_dim, attention_dim)
        self.project_query = (nn.Linear(query_dim, attention_dim, bias=False)
                              if query_dim is not None else None)
        self.score = nn.Linear(attention_dim, 1, bias=False)

    def forward(self, units: Tensor, mask: Tensor, query: Optional[Tensor] = None) -> Tensor:
        """B x U x C unit states, B x U frontier mask (and a B x Q query where the attention was
        built with one) -> B x C."""
        if (query is None) != (self.project_query is None):
            raise ValueError("RightFrontierAttention: a query is given exactly when the "
                             "attention was built with query_dim")
        hidden = self.project(units)
        if query is not None:
            hidden = hidden + self.project_query(query).unsqueeze(1)
        scores = self.score(torch.tanh(hidden)).squeeze(-1)
        scores = scores.masked_fill(~mask, float("-inf"))
        # half-precision scores are normalised in float32; float64 ones stay float64
        weights = F.softmax(scores, dim=-1, dtype=torch.promote_types(scores.dtype, torch.float32))
        weights = weights.type_as(units)
        return torch.bmm(weights.unsqueeze(1), units).squeeze(1)
