"""The plan of a bottom-up recursion over the trees of a batch, one tree height at a time.

A recursive tree encoder (Ahmed et al., 2019; "Recursive Tree Attention") computes each node
from its children, so a node waits for its subtree. Instead of a loop over sentences and nodes,
the trees of a batch are planned once: the parent of every node and leaf, the height of every
node (leaves 0, a node 1 + its highest child), and, for each height, the children of all nodes of
that height, left to right and padded to that height's largest fan-out. ``recurse``
(``recursive_tree``) then runs one composition step per height for the whole batch. The plan
reads the host once (the number of heights and their fan-outs, plus one check of the input).

States live in one *table* of ``B*N + B*M + 1`` rows: row ``b*N + j`` is leaf j of sentence b,
row ``B*N + b*M + i`` node i, and the last row a zero state, the child of padding.

Constituency trees (``plan_from_spans``): nodes are the rows of ``spans`` (B x M x 2, pre-order,
node 0 the root, padded nodes the empty span); leaves are the columns of the leaf axis, of which
only those a node covers belong to the tree; a one-leaf tree has no node and its root is the
leaf. ``flat_plan_from_spans`` lets every node read the leaves of its span directly (the
"without structured modeling" ablation of Recursive Tree Attention). Dependency trees
(``plan_from_heads``): every word with dependents is a node (M = N, node j is word j) whose
children are the word itself, first, then its dependents in sentence order (X_d of Ahmed et al.,
Eq. 1); a word without dependents is a leaf.
"""

import math
from dataclasses import dataclass
from typing import List, NamedTuple

import torch
from torch import Tensor

from fairseq_tree.modules.hierarchical_accumulation import (
    branch_path_lengths,
    interpolation_cover,
    subtree_relation,
)


@dataclass
class RecursionLevel:
    """The nodes of one height, across the batch (K nodes, fan-out F at this height)."""

    nodes: Tensor  # K, table rows of the nodes composed at this height
    children: Tensor  # K x F, table rows of their children in order; the padding row after
    child_mask: Tensor  # K x F bool, True at real children
    child_offset: Tensor  # K x F long, start(child) - start(node); 0 at padding


@dataclass
class RecursionPlan:
    """The tree-only part of a bottom-up recursion over one batch (see the module docstring)."""

    num_leaves: int  # N
    num_nodes: int  # M
    leaf_parent: Tensor  # B x N long, the node whose child leaf j is; -1 where none
    node_parent: Tensor  # B x M long, the parent of node i; -1 for roots and padding
    height: Tensor  # B x M long: 1 + the highest child (leaves have height 0); 0 at padding
    levels: List[RecursionLevel]  # heights 1, 2, ... in order
    node_rows: Tensor  # B x M, the table row holding each node's state (padding row if none)
    root_rows: Tensor  # B, the table row of each tree's root (a leaf in a one-leaf tree)

    @property
    def batch_size(self) -> int:
        return self.leaf_parent.size(0)

    @property
    def leaf_rows(self) -> int:
        """Table rows [0, B*N) are leaves."""
        return self.batch_size * self.num_leaves

    @property
    def padding_row(self) -> int:
        return self.leaf_rows + self.batch_size * self.num_nodes

    @property
    def table_rows(self) -> int:
        return self.padding_row + 1


class Items(NamedTuple):
    """Candidate (child, parent) pairs, flat; a pair whose parent is -1 is no edge."""

    row: Tensor  # table row of the child
    parent: Tensor  # flat index b*M + i of the parent node, or -1
    key: Tensor  # order among siblings, in [-1, num_keys - 1)
    start: Tensor  # first leaf of the child, for child_offset


def smallest_enclosing(relation: Tensor, length: Tensor) -> Tensor:
    """B x X long: for each column x the row i with ``relation[b, i, x]`` and the shortest
    ``length[b, i]``, or -1 where no row relates. Nested distinct spans never tie."""
    if relation.size(1) == 0:
        return torch.full(relation.shape[::2], -1, dtype=torch.long, device=relation.device)
    unrelated = torch.iinfo(torch.long).max
    candidates = torch.where(relation, length.unsqueeze(-1), unrelated)
    best, index = candidates.min(dim=1)
    return torch.where(best < unrelated, index, -1)


def _sibling_ranks(items: Items, num_parents: int, num_keys: int):
    """Sort the pairs by (parent, key), non-edges last (as parent ``num_parents``); return the
    order, the sorted parents, each pair's rank among its siblings and every parent's fan-out."""
    parent = torch.where(items.parent >= 0, items.parent, num_parents)
    order = torch.argsort(parent * num_keys + items.key + 1, stable=True)
    parent = parent[order]
    fanout = torch.zeros(num_parents + 1, dtype=torch.long, device=parent.device)
    fanout.scatter_add_(0, parent, torch.ones_like(parent))
    first = fanout.cumsum(0) - fanout
    rank = torch.arange(parent.numel(), device=parent.device) - first[parent]
    return order, parent, rank, fanout[:num_parents]


def _host_counts(height: Tensor, fanout: Tensor, bad: Tensor) -> tuple:
    """The one host synchronisation of a plan: the nodes of each height, each height's largest
    fan-out, and the first batch row that ``bad`` (B bool) marks, or -1."""
    bins = height.numel() + 1  # a height never exceeds the number of nodes
    count = torch.zeros(bins, dtype=torch.long, device=height.device)
    count.scatter_add_(0, height, torch.ones_like(height))
    widest = torch.zeros(bins, dtype=torch.long, device=height.device)
    widest.scatter_reduce_(0, height, fanout, reduce="amax")
    rows = torch.arange(bad.numel(), device=bad.device)
    first_bad = torch.where(bad, rows, bad.numel()).amin().view(1)
    *values, first_bad = torch.cat([count, widest, first_bad]).tolist()
    count, widest = values[:bins], values[bins:]
    top = max((h for h in range(1, bins) if count[h]), default=0)
    return count[: top + 1], widest[: top + 1], (first_bad if first_bad < bad.numel() else -1)


def _children_table(items: Items, node_start: Tensor, width: int, padding_row: int):
    """(B*M + 1) x width children rows and offsets of every node, from the sorted pairs (their
    ``key`` holding their rank); every non-edge lands in the spare last row."""
    num_nodes, width = node_start.numel(), max(width, 1)
    edge = items.parent < num_nodes
    slot = items.parent * width + torch.where(edge, items.key, 0)
    children = torch.full(((num_nodes + 1) * width,), padding_row, device=node_start.device)
    children[slot] = torch.where(edge, items.row, padding_row)
    offsets = torch.zeros_like(children)
    offset = items.start - node_start[items.parent.clamp(max=num_nodes - 1)]
    offsets[slot] = torch.where(edge, offset, 0)
    return children.view(num_nodes + 1, width), offsets.view(num_nodes + 1, width)


def build_levels(items: Items, height: Tensor, node_start: Tensor, leaf_rows: int,
                 num_keys: int, bad: Tensor, problem: str) -> List[RecursionLevel]:
    """The per-height children lists of all nodes.

    Args:
        items: the child-parent pairs, see ``Items``.
        height: (B*M,) long, each node's height, 0 for padded nodes.
        node_start: (B*M,) long, each node's first leaf.
        leaf_rows: B*N; the table row of node p is ``leaf_rows + p``.
        bad: (B,) bool, rows whose input is invalid: a ValueError "batch row b: ``problem``".
    """
    num_nodes = height.numel()
    order, parent, rank, fanout = _sibling_ranks(items, num_nodes, num_keys)
    count, widest, first_bad = _host_counts(height, fanout, bad)
    if first_bad >= 0:
        raise ValueError(f"batch row {first_bad}: {problem}")
    if num_nodes == 0:
        return []
    padding_row = leaf_rows + num_nodes
    sorted_items = Items(items.row[order], parent, rank, items.start[order])
    children, offsets = _children_table(sorted_items, node_start, max(widest), padding_row)
    by_height = torch.argsort(height, stable=True)
    levels, first = [], count[0]
    for h in range(1, len(count)):
        nodes = by_height[first: first + count[h]]
        first += count[h]
        kids = children[nodes, : widest[h]]
        levels.append(RecursionLevel(leaf_rows + nodes, kids, kids != padding_row,
                                     offsets[nodes, : widest[h]]))
    return levels


def _flat(parent: Tensor, num_nodes: int) -> Tensor:
    """B x X node indices (-1: none) -> flat b*M + i (-1 kept), flattened."""
    sentence = torch.arange(parent.size(0), device=parent.device).unsqueeze(1)
    return torch.where(parent >= 0, sentence * num_nodes + parent, -1).flatten()


SPANS_PROBLEM = ("the spans do not form one tree (distinct, nested, node 0 the root) over exactly "
                 "the unpadded leaves (a tree without nodes has one leaf)")


def _constituency_parents(spans: Tensor, leaf_padding: Tensor):
    """Parents of leaves and nodes (B x N, B x M), the cover (B x M x N), the subtree relation
    (B x M x M), and the rows whose spans do not form one tree over the unpadded leaves."""
    start, end = spans.unbind(-1)
    real, length = start < end, end - start
    cover = interpolation_cover(spans, leaf_padding.size(1))
    below = subtree_relation(spans)  # (i, t): t is in the subtree of i
    inside = below & ~torch.eye(spans.size(1), dtype=torch.bool, device=spans.device)
    node_parent, leaf_parent = smallest_enclosing(inside, length), smallest_enclosing(cover, length)
    has_nodes = real[:, 0] if spans.size(1) else real.new_zeros(spans.size(0))
    overlap = (start.unsqueeze(2) < end.unsqueeze(1)) & (start.unsqueeze(1) < end.unsqueeze(2))
    nested = inside ^ inside.transpose(1, 2)  # exactly one holds the other: no crossing, no twin
    unnested = (overlap & real.unsqueeze(1) & real.unsqueeze(2) & ~nested).flatten(1)
    unnested &= ~torch.eye(spans.size(1), dtype=torch.bool, device=spans.device).flatten()
    stray = ((node_parent[:, 1:] < 0) & real[:, 1:]).any(1) | (node_parent[:, :1] >= 0).any(1)
    stray |= unnested.any(1)
    mismatch = ((leaf_parent >= 0) != (~leaf_padding & has_nodes.unsqueeze(1))).any(1)
    lone = ~real.any(1) & ((~leaf_padding).sum(1) == 1)
    bad = torch.where(has_nodes, stray | mismatch, ~lone)
    return leaf_parent, node_parent, cover, below, bad


def _constituency_plan(spans, leaf_padding, parents, items, height) -> RecursionPlan:
    """The plan from the pairs ``items`` (the rest as ``_constituency_parents`` gives it)."""
    leaf_parent, node_parent, _, _, bad = parents
    (batch, num_nodes), num_leaves = spans.shape[:2], leaf_padding.size(1)
    start, real = spans[..., 0], spans[..., 0] < spans[..., 1]
    leaf_rows = batch * num_leaves
    levels = build_levels(items, height.flatten(), start.flatten(), leaf_rows, num_leaves + 1,
                          bad, SPANS_PROBLEM)
    node_index = torch.arange(batch * num_nodes, device=spans.device).view(batch, num_nodes)
    node_rows = torch.where(real, leaf_rows + node_index, leaf_rows + batch * num_nodes)
    sentence = torch.arange(batch, device=spans.device)
    root_rows = sentence * num_leaves + (~leaf_padding).long().argmax(1)  # the lone leaf
    if num_nodes:
        root_rows = torch.where(real[:, 0], node_rows[:, 0], root_rows)
    return RecursionPlan(num_leaves, num_nodes, leaf_parent, node_parent, height, levels,
                         node_rows, root_rows)


def plan_from_spans(spans: Tensor, leaf_padding: Tensor) -> RecursionPlan:
    """The recursion plan of constituency trees: the children of a node are the nodes and
    leaves whose smallest enclosing node it is.

    Args:
        spans: B x M x 2 ``[start, end)`` leaf columns of the nodes, node 0 the root; spans
            distinct and nested; a padded node has start == end.
        leaf_padding: B x N bool, True at every column that is no leaf of the tree (padding,
            EOS, BOS): the root spans exactly the others; a tree without nodes has one.
    """
    spans = spans.long()
    (batch, num_nodes), num_leaves = spans.shape[:2], leaf_padding.size(1)
    parents = _constituency_parents(spans, leaf_padding)
    leaf_parent, node_parent, cover, below, _ = parents
    column = torch.arange(num_leaves, device=spans.device).repeat(batch)
    start = spans[..., 0].flatten()
    items = Items(
        row=torch.arange(batch * (num_leaves + num_nodes), device=spans.device),
        parent=torch.cat([_flat(leaf_parent, num_nodes), _flat(node_parent, num_nodes)]),
        key=torch.cat([column, start]),
        start=torch.cat([column, start]),
    )
    height = branch_path_lengths(cover, below).amax(-1)
    return _constituency_plan(spans, leaf_padding, parents, items, height)


def flat_plan_from_spans(spans: Tensor, leaf_padding: Tensor) -> RecursionPlan:
    """Every node reads the leaves of its span directly, in one step: plain (non-structured)
    attention over each constituent. Arguments as ``plan_from_spans``; parents are structural."""
    spans = spans.long()
    (batch, num_nodes), num_leaves = spans.shape[:2], leaf_padding.size(1)
    parents = _constituency_parents(spans, leaf_padding)
    cover = parents[2]  # B x M x N
    pair = torch.arange(batch * num_nodes * num_leaves, device=spans.device)
    column = pair % num_leaves
    node = pair // num_leaves  # flat b*M + i
    items = Items(
        row=(pair // (num_nodes * num_leaves)) * num_leaves + column,
        parent=torch.where(cover.flatten(), node, -1),
        key=column,
        start=column,
    )
    height = (spans[..., 0] < spans[..., 1]).long()
    return _constituency_plan(spans, leaf_padding, parents, items, height)


HEADS_PROBLEM = ("the heads do not form one dependency tree over the unpadded leaves (one root "
                 "with head -1, every other word's head a word, no cycle)")


def dependency_closure(heads: Tensor) -> Tensor:
    """B x N x N bool: entry (d, a) is True when word a is word d or one of its heads, heads of
    heads, ... (by repeated squaring: log2 N batched products, no loop over words)."""
    batch, num_words = heads.shape
    step = torch.zeros(batch, num_words, num_words + 1, device=heads.device)
    step.scatter_(2, torch.where(heads >= 0, heads, num_words).unsqueeze(-1), 1.0)
    reach = step[..., :num_words] + torch.eye(num_words, device=heads.device)
    for _ in range(math.ceil(math.log2(max(num_words, 2)))):
        reach = torch.bmm(reach, reach).clamp_(max=1.0)
    return reach > 0


def dependency_heights(heads: Tensor, word: Tensor):
    """Each word's height (the longest way down to a word without dependents; B x N long) and
    the rows whose heads are no tree over the words (B bool). ``heads``: -1 at roots and at
    padding, otherwise a column below N."""
    reach = dependency_closure(heads)  # (d, a): a is d or above d
    depth = reach.sum(-1) - 1
    gap = torch.where(reach, depth.unsqueeze(-1) - depth.unsqueeze(1), 0)
    height = gap.amax(1) if heads.size(1) else depth
    is_root = word & (heads < 0)
    to_padding = (heads >= 0) & ~word.gather(1, heads.clamp(min=0))
    unrooted = word & ~(reach & is_root.unsqueeze(1)).any(-1)  # on a cycle or under one
    return height, (is_root.sum(1) != 1) | (to_padding | unrooted).any(1)


def plan_from_heads(heads: Tensor, leaf_padding: Tensor) -> RecursionPlan:
    """The recursion plan of dependency trees: a word with dependents is a node whose children
    are the word's own leaf, first, then its dependents (nodes or leaves) in sentence order.

    Args:
        heads: B x N long, the column of each word's head; -1 for the root word and at the
            columns that are no word.
        leaf_padding: B x N bool, True at the columns that are no word (padding, EOS, BOS).
    Returns:
        a plan with M = N (node j is word j); ``node_rows`` gives every word its state (its
        node, or its leaf if it has no dependent), padding elsewhere.
    """
    heads, word = heads.long(), ~leaf_padding
    batch, num_words = heads.shape
    out_of_range = word & (heads >= num_words)
    heads = torch.where(leaf_padding | out_of_range, -1, heads)
    height, bad = dependency_heights(heads, word)
    bad |= out_of_range.any(1)
    is_node, is_root = height > 0, word & (heads < 0)
    leaf_rows = batch * num_words
    column = torch.arange(num_words, device=heads.device).expand(batch, -1)
    index = torch.arange(batch * num_words, device=heads.device).view(batch, num_words)
    state_rows = torch.where(is_node, leaf_rows + index, index)
    items = Items(  # each node's own word, then every word under its head
        row=torch.cat([index.flatten(), state_rows.flatten()]),
        parent=torch.cat([torch.where(is_node, index, -1).flatten(), _flat(heads, num_words)]),
        key=torch.cat([torch.full_like(column, -1).flatten(), column.flatten()]),
        start=torch.cat([column.flatten(), column.flatten()]),
    )
    levels = build_levels(items, height.flatten(), column.flatten(), leaf_rows, num_words + 1,
                          bad, HEADS_PROBLEM)
    node_rows = torch.where(word, state_rows, leaf_rows + batch * num_words)
    root_rows = state_rows.flatten()[index[:, 0] + is_root.long().argmax(1)]
    return RecursionPlan(num_words, num_words, torch.where(is_node, column, heads),
                         torch.where(is_node, heads, -1), height, levels, node_rows, root_rows)
