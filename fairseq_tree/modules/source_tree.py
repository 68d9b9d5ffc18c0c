"""The source trees of one batch, as the tree attentions read them."""

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

import torch
from torch import Tensor
from torch.utils.weak import WeakIdKeyDictionary

from fairseq_tree.data.tree_paths import interpolation_cover, subtree_relation
from fairseq_tree.modules.hierarchical_accumulation import (
    PAPER,
    AccumulationConventions,
    AccumulationPlan,
    build_accumulation_plan,
)

# Plans by spans tensor: the encoder's and the decoder's SourceTree of one batch hold the same
# spans tensor (the decoder reads it from the encoder output), so the plan is built once per batch.
# Entries go when the batch's spans tensor is freed.
_PLANS_BY_SPANS: WeakIdKeyDictionary = WeakIdKeyDictionary()


def blocked(visible: Tensor, dtype) -> Tensor:
    """Additive attention mask in ``dtype``: 0 where ``visible``, -inf elsewhere (what SDPA
    makes of a boolean mask at every call, made once)."""
    return torch.zeros(visible.shape, dtype=dtype, device=visible.device).masked_fill_(
        ~visible, float("-inf"))


@dataclass
class SourceTree:
    """Leaves (the columns of ``src_tokens``) and nodes (rows of ``src_node_spans``) of a batch.

    The tree-only work (the accumulation plan, the attention masks) is computed once per batch
    and shared by every layer that reads it; ``prepare`` does it before the layers run. With the
    ``paths`` the collater computed, none of it reads a value back from the device. In the
    decoder the object also carries the encoder's output states (``leaves``/``nodes``), the
    memory cross-attention reads.
    """

    spans: Tensor  # B x M x 2, [start, end) column indices; padded nodes [0, 0)
    leaf_padding_mask: Tensor  # B x N, True at padding
    node_padding_mask: Tensor  # B x M, True at padded nodes
    paths: Optional[Tensor] = None  # P x 6, data.tree_paths.embedding_paths of the batch
    # as collated; where these rows are rows of it reordered (beam search): the collated row of
    # each, and a row of each collated row
    batch_rows: Optional[Tensor] = None
    representatives: Optional[Tensor] = None
    leaves: Optional[Tensor] = None  # N x B x C encoder leaf states (decoder side)
    nodes: Optional[Tensor] = None  # M x B x C encoder node states (decoder side)
    # the decoder's cross-attention memories by attention, where they were made together
    # (``tree_attention.shared_source_memories``)
    cross_memories: Dict = field(default_factory=dict, repr=False)
    _masks: Dict[Tuple, Tensor] = field(default_factory=dict, repr=False)
    _states: Optional[Tensor] = field(default=None, repr=False)
    _sentences: Dict[int, "SourceTree"] = field(default_factory=dict, repr=False)

    @classmethod
    def from_batch(cls, leaf_padding_mask: Tensor, spans: Tensor, paths: Optional[Tensor] = None,
                   batch_rows: Optional[Tensor] = None, representatives: Optional[Tensor] = None,
                   **states) -> "SourceTree":
        node_padding_mask = spans[..., 0] >= spans[..., 1]
        return cls(spans, leaf_padding_mask, node_padding_mask, paths, batch_rows,
                   representatives, **states)

    @property
    def num_leaves(self) -> int:
        return self.leaf_padding_mask.size(1)

    @property
    def num_nodes(self) -> int:
        return self.spans.size(1)

    def accumulation_plan(self, embedding_rows: Optional[tuple], dtype,
                          conventions: AccumulationConventions = PAPER) -> AccumulationPlan:
        """The plan of hierarchical accumulation for these trees, in ``dtype`` (built once per
        batch, embedding row count, dtype and conventions)."""
        plans = _PLANS_BY_SPANS.setdefault(self.spans, {})
        key = (self.num_leaves, embedding_rows, dtype, conventions)
        if key not in plans:
            plans[key] = build_accumulation_plan(
                self.spans, self.num_leaves, embedding_rows, dtype, conventions, self.paths,
                self.relations(), self.batch_rows, self.representatives)
        return plans[key]

    def relations(self) -> Tuple[Tensor, Tensor]:
        """Eq. 5's cover (B x M x N) and the subtree relation (B x M x M) of these trees, built
        once per batch for the plans and the masks."""
        plans = _PLANS_BY_SPANS.setdefault(self.spans, {})
        key = ("relations", self.num_leaves)
        if key not in plans:
            plans[key] = (interpolation_cover(self.spans, self.num_leaves),
                          subtree_relation(self.spans))
        return plans[key]

    def prepare(self, embedding_rows: Optional[tuple], dtype, subtree_masking=None,
                conventions: AccumulationConventions = PAPER):
        """Build now what the layers will read: the plan and, with ``subtree_masking`` given,
        the encoder's self-attention masks; otherwise cross-attention's memory mask."""
        self.accumulation_plan(embedding_rows, dtype, conventions)
        if subtree_masking is None:
            self.memory_mask(dtype)
        else:
            self.unit_query_mask(subtree_masking, dtype)
        return self

    def _cached(self, key: Tuple, build) -> Tensor:
        if key not in self._masks:
            self._masks[key] = build()
        return self._masks[key]

    def self_attention_mask(self, subtree_masking: bool) -> Tensor:
        """B x 1 x (N+M) x (N+M) bool over [leaves; nodes], True where a query may attend a key.

        Leaf queries see the real leaves (Eq. 11: leaves attend to leaves only; Eq. 18). With
        subtree masking (Section 4.3) a node query sees the leaves of its span and the nodes of
        its own subtree, itself included; without it, every real leaf and node. A padded node
        sees only itself, which keeps its unused row finite.
        """
        batch, n, m = self.leaf_padding_mask.size(0), self.num_leaves, self.num_nodes
        leaf_rows = torch.cat([(~self.leaf_padding_mask).unsqueeze(1).expand(batch, n, n),
                               self.leaf_padding_mask.new_zeros(batch, n, m)], dim=2)
        return torch.cat([leaf_rows, self.node_visibility(subtree_masking)], dim=1).unsqueeze(1)

    def node_visibility(self, subtree_masking: bool) -> Tensor:
        """B x M x (N+M) bool: the node rows of ``self_attention_mask``."""
        real_leaves, real_nodes = ~self.leaf_padding_mask, ~self.node_padding_mask
        if subtree_masking:
            node_to_leaf, node_to_node = self.relations()
        else:
            node_to_leaf = real_nodes.unsqueeze(2) & real_leaves.unsqueeze(1)
            node_to_node = real_nodes.unsqueeze(2) & real_nodes.unsqueeze(1)
        padded_self = torch.diag_embed(self.node_padding_mask)
        return torch.cat([node_to_leaf, node_to_node | padded_self], dim=2)

    def unit_query_mask(self, subtree_masking: bool, dtype) -> Tensor:
        """B x 1 x (N+M) x (N+M) additive mask of the queries [leaves; nodes] over the same keys:
        ``self_attention_mask``, 0 where it is True, -inf elsewhere."""
        return self._cached(("units", subtree_masking, dtype), lambda: blocked(
            self.self_attention_mask(subtree_masking), dtype))

    def memory_padding_mask(self) -> Tensor:
        """B x (N+M) bool, True at padding, over the [leaves; nodes] memory of cross-attention."""
        return torch.cat([self.leaf_padding_mask, self.node_padding_mask], dim=1)

    def memory_mask(self, dtype, leaves: bool = True) -> Tensor:
        """B x 1 x 1 x (N+M) additive key-padding mask of cross-attention's memory; with
        ``leaves`` False the leaf keys are masked too (a memory of nodes only)."""
        def build():
            hidden = self.memory_padding_mask()
            if not leaves:
                hidden = hidden.clone()
                hidden[:, :self.num_leaves] = True
            return blocked(~hidden[:, None, None, :], dtype)
        return self._cached(("memory", dtype, leaves), build)

    @property
    def states(self) -> Tensor:
        """(N+M) x B x C: the encoder's leaf then node states, the memory of cross-attention
        (concatenated once for all decoder layers)."""
        if self._states is None:
            self._states = torch.cat([self.leaves, self.nodes], dim=0)
        return self._states

    def sentences(self, copies: int) -> "SourceTree":
        """The trees of rows 0, c, 2c, ... (c = ``copies``): one per sentence when the batch holds
        c consecutive beam copies of each sentence (the same object for every layer)."""
        if copies == 1:
            return self
        if copies not in self._sentences:
            states = {name: getattr(self, name)[:, ::copies] for name in ("leaves", "nodes")}
            rows = (self.batch_rows if self.batch_rows is not None
                    else torch.arange(self.spans.size(0), device=self.spans.device))[::copies]
            collated = self.spans.size(0) if self.representatives is None \
                else self.representatives.size(0)
            self._sentences[copies] = SourceTree(
                self.spans[::copies], self.leaf_padding_mask[::copies],
                self.node_padding_mask[::copies], self.paths, rows,
                representatives(rows, collated), **states)
        return self._sentences[copies]


def representatives(batch_rows: Tensor, collated: int) -> Tensor:
    """(``collated``,): a row holding each collated row, of a batch whose rows are the collated
    rows ``batch_rows`` (rows of one collated row hold the same states, so any will do; a
    collated row none holds gets row 0, whose results are never read)."""
    rows = torch.arange(batch_rows.size(0), device=batch_rows.device)
    return rows.new_zeros(collated).scatter_(0, batch_rows, rows)
