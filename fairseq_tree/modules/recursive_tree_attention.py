"""Recursive Tree Attention (the 004 paper: "Recursive Tree Attention: Improving Semantic
Representations with Syntactic Tree Structured Attention Mechanism"), Eq. 5.

A leaf's context vector is its value, C_leaf = V_leaf (Eq. 4). A node summarises its children by
an additive attention with a fixed zero query (Eq. 5):

    C_node = A_plain([Q; L_node], [C_children + P; L_children], C_children)

with P the sinusoidal encoding (Eqs. 6-7) of each child's position pos(x) = start(x) -
start(parent(x)) (Section 3.1.2) and L 64-d constituent-label embeddings: a node is labelled by
its constituent, a leaf by its POS tag. The root's C is the sentence.

Sub-word nodes (Section 3.1.3): this plugin already turns a word that BPE splits into a node over
its pieces, labelled with the word's POS tag (``fairseq_tree.trees.subwords``); a piece has no
tag. An untagged leaf is labelled X_SW, X its parent's label, by a second embedding table indexed
by that label: one learned label per X, as the paper's added grammar N -> N_SW ... N_SW.

Decisions where the paper is silent: A_plain is Bahdanau's form e_j = v^T tanh(W_k k_j + W_q q),
with one bias, in 128 dimensions; with Q = 0 only the label half of the query matters, so W_q
reads L_node alone. The values are the children's C, unprojected (Eq. 5 sums C_children). A leaf
without a parent node (a one-leaf tree) is its own root.

Ablations (Table 1): ``structured=False`` lets every node attend the leaves of its span directly
(plain attention; the root attends the whole sentence); ``positions=False`` drops P;
``labels=False`` drops L from query and keys; ``subword_nodes=False`` gives a node whose children
are all untagged leaves (a split word) the mean of its pieces instead of attention, so the word
enters its parent as the average of its sub-word vectors, labelled with its POS tag (the paper's
"embeddings averaged"); it needs leaf labels to tell pieces from words.
"""

from typing import Optional

import torch
from torch import Tensor, nn

from fairseq_tree.modules.recursion_plan import (
    RecursionLevel,
    RecursionPlan,
    flat_plan_from_spans,
    plan_from_spans,
)
from fairseq_tree.modules.recursive_tree import (
    RecursiveOutput,
    masked_softmax,
    recurse,
    sinusoidal_encoding,
)


class RecursiveTreeAttention(nn.Module):
    """Recursive Tree Attention (Eq. 5) over constituency trees, bottom-up, one tree height at
    a time for the whole batch (see the module docstring)."""

    def __init__(self, embed_dim: int, num_labels: int, label_padding_idx: int,
                 label_dim: int = 64, attention_dim: int = 128, structured: bool = True,
                 positions: bool = True, labels: bool = True, subword_nodes: bool = True):
        super().__init__()
        self.structured, self.positions, self.subword_nodes = structured, positions, subword_nodes
        self.labels, self.label_padding_idx = labels, label_padding_idx
        if labels:
            self.label_embedding = nn.Embedding(num_labels, label_dim, label_padding_idx)
            self.subword_label_embedding = nn.Embedding(num_labels, label_dim, label_padding_idx)
            self.query = nn.Linear(label_dim, attention_dim, bias=False)  # W_q on [0; L_node]
        self.key = nn.Linear(embed_dim + (label_dim if labels else 0), attention_dim)
        self.energy = nn.Linear(attention_dim, 1, bias=False)  # v

    def build_plan(self, leaf_padding: Tensor, spans: Tensor) -> RecursionPlan:
        builder = plan_from_spans if self.structured else flat_plan_from_spans
        return builder(spans, leaf_padding)

    def untagged_leaves(self, plan: RecursionPlan, leaf_labels: Optional[Tensor]) -> Tensor:
        """(table rows,) bool: True at the leaves without a POS tag (sub-word pieces)."""
        untagged = torch.zeros(plan.table_rows, dtype=torch.bool, device=plan.node_rows.device)
        if leaf_labels is None:
            untagged[: plan.leaf_rows] = True
        else:
            untagged[: plan.leaf_rows] = leaf_labels.flatten() == self.label_padding_idx
        return untagged

    def row_labels(self, plan: RecursionPlan, node_labels: Tensor, untagged: Tensor,
                   leaf_labels: Optional[Tensor]) -> Tensor:
        """(table rows) x label_dim: L of every leaf (its tag, or X_SW with X its parent's
        label) and node (its label); 0 in the padding row."""
        pad = self.label_padding_idx
        parent = plan.leaf_parent
        parent_label = node_labels.gather(1, parent.clamp(min=0)) if plan.num_nodes else parent
        parent_label = torch.where(parent >= 0, parent_label, pad)
        tags = leaf_labels if leaf_labels is not None else torch.full_like(parent, pad)
        leaf = torch.where(untagged[: plan.leaf_rows].view_as(parent).unsqueeze(-1),
                           self.subword_label_embedding(parent_label), self.label_embedding(tags))
        node = self.label_embedding(node_labels)
        return torch.cat([leaf.flatten(0, 1), node.flatten(0, 1), node.new_zeros(1, node.size(-1))])

    def additive_attention(self, keys: Tensor, query: Optional[Tensor], values: Tensor,
                           mask: Tensor) -> Tensor:
        """A_plain of Eq. 5 (Bahdanau et al.): weights softmax_j(v^T tanh(W_k k_j + W_q q)) over
        the real children, summing ``values``. keys K x F x Dk, query K x A or None (Q = 0
        without labels), values K x F x C, mask K x F bool -> K x C."""
        hidden = self.key(keys)
        if query is not None:
            hidden = hidden + query.unsqueeze(1)
        weights = masked_softmax(self.energy(torch.tanh(hidden)).squeeze(-1), mask)
        return torch.einsum("kf,kfc->kc", weights, values)

    def compose(self, children: Tensor, level: RecursionLevel, labels: Optional[Tensor],
                untagged: Tensor) -> Tensor:
        """Eq. 5 for the K nodes of one height: children K x F x C -> K x C."""
        keys, query, mask = children, None, level.child_mask
        if self.positions:
            keys = keys + sinusoidal_encoding(level.child_offset, keys.size(-1), keys.dtype)
        if labels is not None:
            keys = torch.cat([keys, labels[level.children]], dim=-1)
            query = self.query(labels[level.nodes])
        composed = self.additive_attention(keys, query, children, mask)
        if self.subword_nodes:
            return composed
        split_word = (untagged[level.children] | ~mask).all(1, keepdim=True)
        mean = children.sum(1) / mask.sum(1, keepdim=True).to(children.dtype)
        return torch.where(split_word, mean, composed)

    def forward(self, leaf_states: Tensor, leaf_padding: Tensor, spans: Tensor,
                node_labels: Tensor, leaf_labels: Optional[Tensor] = None,
                heads: Optional[Tensor] = None,
                plan: Optional[RecursionPlan] = None) -> RecursiveOutput:
        """
        Args:
            leaf_states: B x N x C, the leaves' values V (C_leaf = V_leaf, Eq. 4).
            leaf_padding: B x N bool, True at the columns that are no leaf of the tree.
            spans: B x M x 2 node spans, pre-order, node 0 the root, padding [0, 0).
            node_labels: B x M label ids (padding: ``label_padding_idx``).
            leaf_labels: B x N POS-tag ids, ``label_padding_idx`` where a leaf has no tag (a
                sub-word piece); None: no leaf has a tag. ``heads`` is not read.
            plan: a plan built by ``build_plan`` for these trees, to share it.
        Returns:
            node states B x M x C and root states B x C.
        """
        if not self.subword_nodes and leaf_labels is None:
            raise ValueError("the no-sub-word-nodes ablation needs leaf labels (POS tags) to "
                             "tell sub-word pieces from words")
        plan = plan if plan is not None else self.build_plan(leaf_padding, spans)
        untagged = self.untagged_leaves(plan, leaf_labels)
        labels = self.row_labels(plan, node_labels, untagged, leaf_labels) if self.labels else None
        return recurse(plan, leaf_states,
                       lambda children, level: self.compose(children, level, labels, untagged))
