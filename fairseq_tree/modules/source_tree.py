"""The source trees of one batch, as the tree attentions read them."""

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

import torch
from torch import Tensor

from fairseq_tree.modules.hierarchical_accumulation import (
    AccumulationPlan,
    build_accumulation_plan,
    interpolation_cover,
    subtree_relation,
)


@dataclass
class SourceTree:
    """Leaves (the columns of ``src_tokens``) and nodes (rows of ``src_node_spans``) of a batch.

    The tree-only work (the accumulation plan, the self-attention mask) is computed on first use
    and shared by every layer that reads this object. In the decoder the object also carries the
    encoder's output states (``leaves``/``nodes``), the memory cross-attention reads.
    """

    spans: Tensor  # B x M x 2, [start, end) column indices; padded nodes [0, 0)
    leaf_padding_mask: Tensor  # B x N, True at padding
    node_padding_mask: Tensor  # B x M, True at padded nodes
    leaves: Optional[Tensor] = None  # N x B x C encoder leaf states (decoder side)
    nodes: Optional[Tensor] = None  # M x B x C encoder node states (decoder side)
    _plans: Dict[Tuple, AccumulationPlan] = field(default_factory=dict, repr=False)
    _masks: Dict[bool, Tensor] = field(default_factory=dict, repr=False)

    @classmethod
    def from_batch(cls, leaf_padding_mask: Tensor, spans: Tensor, **states) -> "SourceTree":
        node_padding_mask = spans[..., 0] >= spans[..., 1]
        return cls(spans, leaf_padding_mask, node_padding_mask, **states)

    @property
    def num_leaves(self) -> int:
        return self.leaf_padding_mask.size(1)

    @property
    def num_nodes(self) -> int:
        return self.spans.size(1)

    def accumulation_plan(self, embedding_rows: Optional[tuple], dtype) -> AccumulationPlan:
        """The plan of hierarchical accumulation for these trees (built once per row count)."""
        key = (embedding_rows, dtype)
        if key not in self._plans:
            self._plans[key] = build_accumulation_plan(
                self.spans, self.num_leaves, embedding_rows, dtype=dtype
            )
        return self._plans[key]

    def self_attention_mask(self, subtree_masking: bool) -> Tensor:
        """B x 1 x (N+M) x (N+M) bool over [leaves; nodes], True where a query may attend a key.

        Leaf queries see the real leaves (Eq. 15: leaves attend to leaves only). With subtree
        masking (Section 4.3) a node query sees the leaves of its span and the nodes of its own
        subtree, itself included; without it, every real leaf and node. A padded node sees only
        itself, which keeps its unused row finite.
        """
        if subtree_masking not in self._masks:
            self._masks[subtree_masking] = self._build_self_attention_mask(subtree_masking)
        return self._masks[subtree_masking]

    def _build_self_attention_mask(self, subtree_masking: bool) -> Tensor:
        real_leaves = ~self.leaf_padding_mask  # B x N
        real_nodes = ~self.node_padding_mask  # B x M
        batch, n, m = real_leaves.size(0), self.num_leaves, self.num_nodes
        leaf_rows = torch.cat(
            [real_leaves.unsqueeze(1).expand(batch, n, n), real_leaves.new_zeros(batch, n, m)], dim=2
        )
        if subtree_masking:
            node_to_leaf = interpolation_cover(self.spans, n)
            node_to_node = subtree_relation(self.spans)
        else:
            node_to_leaf = real_nodes.unsqueeze(2) & real_leaves.unsqueeze(1)
            node_to_node = real_nodes.unsqueeze(2) & real_nodes.unsqueeze(1)
        padded_self = torch.diag_embed(self.node_padding_mask)
        node_rows = torch.cat([node_to_leaf, node_to_node | padded_self], dim=2)
        return torch.cat([leaf_rows, node_rows], dim=1).unsqueeze(1)

    def memory_padding_mask(self) -> Tensor:
        """B x (M+N) bool, True at padding, over the [nodes; leaves] memory of cross-attention."""
        return torch.cat([self.node_padding_mask, self.leaf_padding_mask], dim=1)
