"""Hierarchical accumulation (Nguyen et al., ICLR 2020, Section 4.2, Eqs. 5-10), exact and without
the (m+1) x n x d tensor S.

The paper builds S by interpolating leaf and node values (Eq. 5), adds hierarchical embeddings
(Eq. 9), takes the upward cumulative average of every branch (Eq. 6) and aggregates each node's
row with the leaf weights w (Eq. 7). Every step is linear in the values, so for node i

    N-bar'_i = sum_j alpha_ij l_j  +  sum_t beta_it n_t  +  sum_k gamma^v_ik E^v_k (+) gamma^h_ik E^h_k

with alpha (m x n), beta (m x m) and gamma (m x K) depending only on the tree and on w. The tree
part is computed once per batch (``AccumulationPlan``, shared by every layer); each layer then
costs one product of [alpha | beta] with the values [L; N], the products that make beta from
alpha, and a gather and a scatter over the batch's (i, t, j) paths, for gamma. The scatter sums
in float32 whatever the values' dtype, and everything else is a product: no sum of Eqs. 5-10 is
accumulated in half precision.

Notation: node t is *below* node i (t in subtree(i), t = i included) when span_t lies inside
span_i; the *path* P(i, j) from node i down to leaf j is the set of nodes below i whose span holds
j. A padded node has an empty span: it covers no leaf, lies below no node, and its output row is 0.
The relations of the tree alone (Eq. 5's cover, the subtree relation, the path lengths of Eq. 6,
Eq. 9's paths) are in ``data.tree_paths``, where the collater computes the paths.

The authors' released code (nxphi47/tree_transformer, fairseq 0.6.2) computes some steps
differently; ``AccumulationConventions`` switches to them, one at a time or all together.
"""

from dataclasses import dataclass
from typing import Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

from fairseq_tree.data.tree_paths import (
    LEAF,
    NODE,
    PATH_LENGTH,
    RANK,
    ROOT_DEPTH,
    ROW,
    branch_path_lengths,
    embedding_paths,
    interpolation_cover,
    subtree_relation,
)

@dataclass(frozen=True)
class AccumulationConventions:
    """Which steps follow the authors' released code instead of the paper's equations (all False:
    the paper). Never offered: their padded nodes, whose inclusive span [0, 0] puts them inside
    every real node that covers the first leaf, so that a sentence's output depends on its batch.
    """

    path_count_average: bool = False  # (a) Eq. 6 divides by |P(i, j)|, not 1 + |P(i, j)|
    root_depth_index: bool = False  # (b) Eq. 9's vertical row: node t's depth from the root
    head_leaf_weights: bool = False  # (c) Eq. 7's w per head with a bias: w = L U + b
    released_embedding_init: bool = False  # (d) E^v, E^h from N(0, 1), 50 and 100 rows

    @classmethod
    def released(cls) -> "AccumulationConventions":
        return cls(True, True, True, True)


PAPER = AccumulationConventions()


@dataclass
class EmbeddingIndex:
    """Eq. 9's paths of one batch as flat indices, for ``embedding_weights``: for every path
    entry (node i, node t on a path below i, leaf j under t), twice (its E^v row, then its E^h
    row), ``source`` indexes alpha_ij in alpha laid out B x M x T, and ``target`` the cell of
    gamma (laid out 2 x B x M x K, K = max(Kv, Kh): the rows of E^v, then those of E^h) that
    counts the row.

    B is the batch the paths were collated for. A batch reordered since (beam search repeats and
    drops sentences) gives ``batch_rows``, the collated row of each of its rows, and
    ``representatives``, a row of it for each collated row (rows of one sentence hold the same
    states): its alpha is read at the representatives, and gamma at ``batch_rows``."""

    source: Tensor  # (2P,)
    target: Tensor  # (2P,)
    rows: Tuple[int, int]  # (Kv, Kh)
    batch_rows: Optional[Tensor] = None  # (B',) collated row of each row
    representatives: Optional[Tensor] = None  # (B,) a row of each collated row


@dataclass
class AccumulationPlan:
    """The tree-only part of the accumulation of one batch: everything except values and w.

    Leaf columns are indices into the (padded) leaf axis of length n; node rows follow the spans.
    The float tensors are in the dtype the plan was built for, the layers' compute dtype, so that
    no layer converts them. Those the layers read span all units, leaves then nodes, so that the
    layers read their values and weights whole, without taking the leaves apart.
    """

    num_leaves: int
    cover: Tensor  # B x M x N bool: leaf j lies in span_i (the cells of S that hold node i, Eq. 5)
    below: Tensor  # B x M x M bool: node t is below node i, itself included
    path_length: Tensor  # B x M x N: |P(i, j)|, the nodes on the path from i down to leaf j
    # Over the T = N + M units [leaves; nodes], as the attentions hold them (node columns 0):
    unit_scale: Tensor  # B x M x T: kappa_ij = 1 / (|span_i| * |C_j^i|) on the cover, else 0
    spread: Tensor  # B x T x T: [[I, cover^T], [0, 0]]: alpha -> [alpha | sum_j alpha_ij cover_tj]
    reach: Tensor  # B x M x T: [cover | below], what node i accumulates of [L; N]
    embedding_index: Optional[EmbeddingIndex] = None  # only when embeddings are used


def aggregation_scale(spans: Tensor, cover: Tensor, path_length: Tensor, dtype) -> Tensor:
    """Eqs. 6-7 without w: kappa_ij = 1 / (|span_i| * |C_j^i|) on the cover, 0 elsewhere.

    Eq. 7 (weighted aggregation V) averages w_j * (branch average of Eq. 6) over the |span_i|
    leaves of node i; with alpha_ij = w_j * kappa_ij every term of the branch average of cell
    (i, j) enters N-bar_i with weight alpha_ij.
    """
    span_length = (spans[..., 1] - spans[..., 0]).clamp(min=1).to(dtype).unsqueeze(-1)
    scale = 1.0 / (span_length * (1 + path_length).to(dtype))
    return scale.masked_fill(~cover, 0.0)


def path_count_aggregation_scale(spans: Tensor, cover: Tensor, path_length: Tensor,
                                 dtype) -> Tensor:
    """Eqs. 6-7 as the authors' released code computes them (convention (a)): the branch sum of
    cell (i, j), leaf included, divided by |P(i, j)|, the nodes on the path, not by
    |C_j^i| = 1 + |P(i, j)|: kappa_ij = 1 / (|span_i| * |P(i, j)|) on the cover, 0 elsewhere
    (|P(i, j)| >= 1 there: node i itself is on the path).

    There (src/modules/nstack_merge_tree_attention.py, ``accumulate_upward`` with the 'mean'
    up-norm of the architectures its README trains) the upward cumulative sum starts with the
    leaf but is divided by the cumulative count of the node mask alone; the division by
    |span_i| is ``accumulate_rightward``'s 'mean' norm, as Eq. 7's."""
    span_length = (spans[..., 1] - spans[..., 0]).clamp(min=1).to(dtype).unsqueeze(-1)
    scale = 1.0 / (span_length * path_length.clamp(min=1).to(dtype))
    return scale.masked_fill(~cover, 0.0)


def embedding_index(paths: Tensor, batch: int, num_nodes: int, num_units: int,
                    rows: Tuple[int, int], root_depth_index: bool = False) -> EmbeddingIndex:
    """Eq. 9's rows for every path entry of ``paths`` (``data.tree_paths.embedding_paths`` of a
    batch of ``batch`` trees, on the device: this reads nothing back from it): a = |V_j^t| =
    |P(t, j)| (with ``root_depth_index``, the released code's convention (b), t's depth from the
    root) and b = |H_j^t|, each clipped to the last row of its table (Kv, Kh = ``rows``);
    ``num_units`` T = N + M, the columns of alpha."""
    vertical_rows, horizontal_rows = rows
    width = max(rows)
    node = paths[:, ROW] * num_nodes + paths[:, NODE]
    vertical = paths[:, ROOT_DEPTH if root_depth_index else PATH_LENGTH]
    source = node * num_units + paths[:, LEAF]
    cell = node * width
    target = torch.cat([cell + vertical.clamp(max=vertical_rows - 1),
                        cell + paths[:, RANK].clamp(max=horizontal_rows - 1)
                        + batch * num_nodes * width])
    return EmbeddingIndex(source=torch.cat([source, source]), target=target, rows=rows)


def build_accumulation_plan(
    spans: Tensor, num_leaves: int, embedding_rows: Optional[tuple] = None, dtype=torch.float32,
    conventions: AccumulationConventions = PAPER, paths: Optional[Tensor] = None,
    relations: Optional[Tuple[Tensor, Tensor]] = None, batch_rows: Optional[Tensor] = None,
    representatives: Optional[Tensor] = None,
) -> AccumulationPlan:
    """Everything of Eqs. 5-10 that depends on the tree alone, for one batch.

    Args:
        spans: B x M x 2 ``[start, end)`` leaf spans (nodes in any order, spans distinct and
            nested; a padded node has start == end).
        num_leaves: N, the length of the leaf axis the spans index.
        embedding_rows: ``(Kv, Kh)``, the rows of E^v and E^h, or None without embeddings.
        conventions: conventions (a) and (b) of the released code change the plan.
        paths: ``data.tree_paths.embedding_paths`` of the batch as the collater made it; without
            them they are found here, which makes the host wait for the device on a GPU.
        relations: ``interpolation_cover`` and ``subtree_relation`` of the spans, when they are
            at hand already.
        batch_rows, representatives: where ``spans`` are rows of the collated batch, reordered
            (``EmbeddingIndex``): the collated row of each, and a row of each collated row.
    """
    spans = spans.long()
    exact = exact_dtype(dtype)  # the scales of half models, rounded once
    batch, num_nodes = spans.shape[:2]
    cover, below = relations or (interpolation_cover(spans, num_leaves), subtree_relation(spans))
    path_length = branch_path_lengths(cover, below)
    scale = path_count_aggregation_scale if conventions.path_count_average else aggregation_scale
    kappa = scale(spans, cover, path_length, exact).to(dtype)
    identity = torch.eye(num_leaves, dtype=dtype, device=spans.device).expand(batch, -1, -1)
    leaf_rows = torch.cat([identity, cover.transpose(1, 2).to(dtype)], dim=2)  # B x N x T
    plan = AccumulationPlan(
        num_leaves=num_leaves,
        cover=cover,
        below=below,
        path_length=path_length,
        unit_scale=F.pad(kappa, (0, num_nodes)),
        spread=F.pad(leaf_rows, (0, 0, 0, num_nodes)),  # nodes' rows: alpha is 0 there
        reach=torch.cat([cover, below], dim=2).to(dtype),
    )
    if embedding_rows is not None:
        if paths is None:  # the paths of these rows, as they are
            paths, batch_rows, representatives = embedding_paths(spans), None, None
        collated = batch if representatives is None else representatives.size(0)
        plan.embedding_index = embedding_index(
            paths.to(spans.device), collated, num_nodes, num_leaves + num_nodes, embedding_rows,
            conventions.root_depth_index)
        plan.embedding_index.batch_rows = batch_rows
        plan.embedding_index.representatives = representatives
    return plan


def exact_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype a sum of ``dtype`` values is taken in: float32, or float64 for float64."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def embedding_weights(alpha: Tensor, index: EmbeddingIndex) -> Tensor:
    """gamma: how much of each row of E^v and E^h node i accumulates (Eqs. 9-10 through
    Eqs. 6-7), 2 x (B G M) x K for alpha of B x G x M x T (G groups of values, each with its
    own w): gamma[0] counts the rows of E^v, gamma[1] those of E^h, so that the batched product
    ``gamma @ [E^v; E^h]`` is [sum_k gamma^v_k E^v_k; sum_k gamma^h_k E^h_k].

    The entries are gathered and summed in float32 (at least): a scatter into half precision
    with repeated targets would round every partial sum (and on a GPU it takes half-precision
    atomics). Returns float32 (float64 for float64 alpha)."""
    if index.representatives is not None:  # the collated batch's rows
        alpha = alpha.index_select(0, index.representatives)
    batch, groups, num_nodes, _ = alpha.shape
    exact = alpha.to(exact_dtype(alpha.dtype))
    width = max(index.rows)
    entries = exact.permute(0, 2, 3, 1).reshape(-1, groups).index_select(0, index.source)
    gamma = exact.new_zeros(2 * batch * num_nodes * width, groups)
    gamma = gamma.index_add_(0, index.target, entries).view(2, batch, num_nodes, width, groups)
    if index.batch_rows is not None:
        gamma = gamma.index_select(1, index.batch_rows)
    return gamma.permute(0, 1, 4, 2, 3).reshape(2, -1, width)


def accumulate_values(plan: AccumulationPlan, values: Tensor, weights: Tensor,
                      table: Optional[Tensor] = None) -> Tensor:
    """Eq. 8 (Eq. 10 with embeddings): N-bar' = V(U(F(L, N, R) + E), w), through ``plan``.

    The d values are G groups of d/G, each accumulated with its own w: the paper's w, one for
    every head, is G = 1; the authors' released code (convention (c), their ``dwstack_linear``
    and ``accumulate_rightward`` in src/modules/nstack_merge_tree_attention.py) has one w per
    head, w = L U + b, G = H groups of d/H.

    Args:
        values: B x T x d, the values of the T = N + M units, leaves then nodes (any strides).
        weights: B x T x G, the w of Eq. 7 of each unit and group (any strides); only those of
            the leaves a node covers count: the others (the nodes', EOS's, padding's) are
            multiplied by 0, so they must be finite, as a layer's are (``accumulate`` masks
            them, for weights from anywhere).
        table: 2 x K x e/2, the rows of E^v and those of E^h (``embedding_weights``), or None.
            d/G must be a multiple of e: [E^v_a ; E^h_b] is added to every e-wide slice of the
            values, which is how the embeddings are shared across attention heads. Or
            S x 2 x K x e/2, S tables, each for G/S consecutive groups (attentions of S layers
            accumulated together, each with its own E).
    Returns:
        B x M x d; rows of padded nodes are 0.
    """
    dtype = values.dtype
    batch, units, width = values.shape
    num_nodes, groups = units - plan.num_leaves, weights.size(-1)
    # alpha_ij = w_j kappa_ij: B x G x M x T, 0 off the cover
    alpha = weights.to(dtype).permute(0, 2, 1).unsqueeze(2) * plan.unit_scale.unsqueeze(1)
    # [alpha | beta], beta_it = sum over the leaves j of node t of alpha_ij, for t below i: the
    # products are batched over B with the groups' rows stacked (G M rows a tree)
    spread = torch.bmm(alpha.reshape(batch, groups * num_nodes, units), plan.spread)
    coefficients = spread.view(batch, groups, num_nodes, units) * plan.reach.unsqueeze(1)
    grouped = values.view(batch, units, groups, width // groups).transpose(1, 2)  # B x G x T x d/G
    out = torch.bmm(coefficients.view(batch * groups, num_nodes, units),
                    grouped.reshape(batch * groups, units, width // groups))
    if table is not None:
        if plan.embedding_index is None:
            raise ValueError("the accumulation plan was built without embedding rows")
        gamma = embedding_weights(alpha, plan.embedding_index).to(dtype)
        tables = table.view(-1, *table.shape[-3:])  # S x 2 x K x e/2
        count, rows, half = tables.size(0), tables.size(2), tables.size(3)
        # each table's groups in one product: 2 S x (B G/S M) x K times 2 S x K x e/2
        gamma = gamma.view(2, batch, count, groups // count * num_nodes, rows).transpose(1, 2)
        embedded = torch.bmm(gamma.reshape(2 * count, -1, rows),
                             tables.to(dtype).transpose(0, 1).reshape(2 * count, rows, half))
        embedded = embedded.view(2, count, batch, groups // count, num_nodes, 1, half)
        embedded = embedded.permute(2, 1, 3, 4, 5, 0, 6)  # B x S x G/S x M x 1 x 2 x e/2
        slices = out.view(batch, count, groups // count, num_nodes,
                          width // groups // (2 * half), 2, half)
        out = slices + embedded  # every e-wide slice: [E^v part; E^h part]
    out = out.reshape(batch, groups, num_nodes, width // groups)
    return out.transpose(1, 2).reshape(batch, num_nodes, width)


def accumulate(plan: AccumulationPlan, leaves: Tensor, nodes: Tensor, leaf_weights: Tensor,
               vertical: Optional[Tensor] = None, horizontal: Optional[Tensor] = None) -> Tensor:
    """``accumulate_values`` of leaves (B x N x d) and nodes (B x M x d) given apart, with the
    w of the leaves (B x N, or B x N x G; those of leaves no node covers are ignored, whatever
    they are) and the tables of E^v (Kv x e/2) and E^h (Kh x e/2) apart, or neither."""
    table = None
    if vertical is not None:
        rows = max(vertical.size(0), horizontal.size(0))
        table = torch.stack([F.pad(t, (0, 0, 0, rows - t.size(0))) for t in (vertical, horizontal)])
    weights = leaf_weights.unsqueeze(-1) if leaf_weights.dim() == 2 else leaf_weights
    # masked, not multiplied by 0 alone: the w of leaves no node covers may be anything, NaN too
    weights = weights.masked_fill(~plan.cover.any(dim=1).unsqueeze(-1), 0.0)
    weights = F.pad(weights, (0, 0, 0, nodes.size(1)))  # the nodes' w count for nothing
    return accumulate_values(plan, torch.cat([leaves, nodes], dim=1), weights, table)


def hierarchical_accumulation(
    leaves: Tensor,
    nodes: Tensor,
    spans: Tensor,
    leaf_weights: Tensor,
    vertical: Optional[Tensor] = None,
    horizontal: Optional[Tensor] = None,
) -> Tensor:
    """Hierarchical accumulation of Section 4.2: N-bar' of Eq. 10 (Eq. 8 without embeddings).

    For node i with leaves j in its span: the branch average of l_j and of (n_t + E_{t,j}) over
    the nodes t on the path from i down to leaf j (Eq. 6), then
    (1 / |span_i|) * sum_j w_j * that average (Eq. 7). E_{t,j} = [E^v[a] ; E^h[b]], with
    a = |V_j^t| (nodes on the path from t down to leaf j, t included) and b = j - start_t + 1,
    both clipped to K - 1; row 0 is never used (Eq. 9).

    Args:
        leaves: float B x n x d, leaf values (L W^V).
        nodes: float B x m x d, node values (N W^V).
        spans: long B x m x 2, ``[start, end)`` leaf span of each node; nodes in any order; spans
            distinct and nested; a padded node has start == end.
        leaf_weights: float B x n, w of Eq. 7 (entries of padded leaves are ignored).
        vertical, horizontal: float K x d/2 or None, the rows of E^v and E^h (Eq. 9).
    Returns:
        B x m x d; rows of padded nodes are 0. Never builds a B x m x n x d tensor.
    """
    if (vertical is None) != (horizontal is None):
        raise ValueError("give both vertical and horizontal embeddings, or neither")
    rows = None if vertical is None else (vertical.size(0), horizontal.size(0))
    dtype = torch.promote_types(leaves.dtype, torch.float32)
    plan = build_accumulation_plan(spans, leaves.size(1), rows, dtype=dtype)
    return accumulate(plan, leaves, nodes, leaf_weights, vertical, horizontal)
