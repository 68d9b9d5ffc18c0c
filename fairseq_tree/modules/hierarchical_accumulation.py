"""Hierarchical accumulation (Nguyen et al., ICLR 2020, Section 4.2, Eqs. 5-10), exact and without
the (m+1) x n x d tensor S.

The paper builds S by interpolating leaf and node values (Eq. 5), adds hierarchical embeddings
(Eq. 9), takes the upward cumulative average of every branch (Eq. 6) and aggregates each node's
row with the leaf weights w (Eq. 7). Every step is linear in the values, so for node i

    N-bar'_i = sum_j alpha_ij l_j  +  sum_t beta_it n_t  +  sum_k gamma^v_ik E^v_k (+) gamma^h_ik E^h_k

with alpha (m x n), beta (m x m) and gamma (m x K) depending only on the tree and on w. The tree
part is computed once per batch (``AccumulationPlan``, shared by every layer); each layer then
costs two (m x n)-sized matrix products, one (m x m) product and O(#paths) gathers.

Notation: node t is *below* node i (t in subtree(i), t = i included) when span_t lies inside
span_i; the *path* P(i, j) from node i down to leaf j is the set of nodes below i whose span holds
j. A padded node has an empty span: it covers no leaf, lies below no node, and its output row is 0.

The authors' released code (nxphi47/tree_transformer, fairseq 0.6.2) computes some steps
differently; ``AccumulationConventions`` switches to them, one at a time or all together.
"""

from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor


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
class AccumulationPlan:
    """The tree-only part of the accumulation of one batch: everything except values and w.

    Leaf columns are indices into the (padded) leaf axis of length n; node rows follow ``spans``.
    The float tensors are in the dtype the plan was built for, the layers' compute dtype, so that
    no layer converts them.
    """

    cover: Tensor  # B x M x N bool: leaf j lies in span_i (the cells of S that hold node i, Eq. 5)
    below: Tensor  # B x M x M bool: node t is below node i, itself included
    leaf_scale: Tensor  # B x M x N: 1 / (|span_i| * |C_j^i|) on cover, else 0 (Eqs. 6-7)
    path_length: Tensor  # B x M x N: |P(i, j)|, the nodes on the path from i down to leaf j
    covered_leaves: Tensor  # B x N bool: leaf j lies in the span of some node
    leaf_cover: Tensor  # B x N x M float: cover transposed (leaf j lies in span_t)
    below_weight: Tensor  # B x M x M float: below
    embedding_paths: Optional["EmbeddingPaths"] = None  # only when embeddings are used


@dataclass
class EmbeddingPaths:
    """One entry per (node i, node t on a path below i, leaf j under t): the flat index of
    alpha_ij and the rows of E^v and E^h that the cell (t, j) of S adds (Eq. 9), as flat indices
    of one accumulator gamma (B*M x (Kv + Kh)): columns [0, Kv) count rows of E^v, [Kv, Kv + Kh)
    rows of E^h. Both indices list the vertical entries, then the horizontal ones."""

    weight_index: Tensor  # (2P,) index of alpha_ij in alpha.view(-1), twice
    target: Tensor  # (2P,) (b*M + i) * (Kv + Kh) + clip(|V_j^t|), then ... + Kv + clip(|H_j^t|)
    vertical_rows: int
    horizontal_rows: int


def interpolation_cover(spans: Tensor, num_leaves: int) -> Tensor:
    """Eq. 5 (interpolation F): which cells of S hold a node value.

    S_{i+1,j} = n_i where leaf j lies in span_i, 0 elsewhere (row 0 holds the leaves).

    Args:
        spans: B x M x 2 ``[start, end)`` leaf spans; a padded node has start == end.
    Returns:
        B x M x N bool, True where S_{i+1,j} = n_i.
    """
    leaf = torch.arange(num_leaves, device=spans.device)
    start, end = spans[..., :1], spans[..., 1:]
    return (leaf >= start) & (leaf < end)


def subtree_relation(spans: Tensor) -> Tensor:
    """B x M x M bool: entry (i, t) is True when node t is in the subtree of node i (span_t inside
    span_i, t = i included). Padded nodes are in no subtree and have none. This is both the
    nodes-to-nodes part of subtree masking (Section 4.3) and the branch structure of Eq. 6."""
    start, end = spans[..., 0], spans[..., 1]
    real = start < end
    inside = (start.unsqueeze(1) >= start.unsqueeze(2)) & (end.unsqueeze(1) <= end.unsqueeze(2))
    return inside & real.unsqueeze(1) & real.unsqueeze(2)


def branch_path_lengths(cover: Tensor, below: Tensor) -> Tensor:
    """Eq. 6 (upward cumulative average U): the number of node cells averaged on each branch.

    The average of node i at leaf j runs over C_j^i = {S_{1,j}} and the cells of the nodes on the
    path P(i, j) from i down to j, so |C_j^i| = 1 + |P(i, j)|. Returns |P(i, j)| (B x M x N),
    meaningful where ``cover``.
    """
    # Counts are small integers: exact in float32 (and the product is a plain batched matmul).
    counts = torch.bmm(below.float(), cover.float())
    return counts.round_().to(torch.long)


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


def root_depths(below: Tensor) -> Tensor:
    """B x M: the depth of each node counted from the root, the root 1 (the nodes whose subtree
    holds it, itself included); 0 for padded nodes. The vertical row of Eq. 9 in the authors'
    released code (convention (b)), the same for every leaf under the node.

    There (src/modules/nstack_merge_tree_attention.py, ``MergeHierarchicalEmbedding.forward``)
    the vertical index is a cumulative count of the node mask taken from the root's end of the
    node axis (src/binarization.py stores a tree's nodes children first, reversing their
    breadth-first order), so it counts node t and the nodes above it,
    not the nodes from t down to leaf j."""
    return below.sum(dim=1)


def hierarchical_embedding_paths(
    spans: Tensor, below: Tensor, path_length: Tensor, vertical_rows: int, horizontal_rows: int,
    root_depth_index: bool = False,
) -> EmbeddingPaths:
    """Eq. 9 (hierarchical embeddings E): the row indices each cell of S adds, along every path.

    Cell (t, j) of S (node t, leaf j in span_t) gets E_{t,j} = [E^v_a ; E^h_b] with
    a = |V_j^t| = |P(t, j)| (the nodes from t down to leaf j, t included) and
    b = |H_j^t| = j - start_t + 1 (the rank of leaf j in span_t), each clipped to the last row.
    Eq. 10 adds E to S before the branch averages, so node i receives alpha_ij * E_{t,j} for every
    t on P(i, j). This enumerates those (i, t, j) once per batch, without any d-sized tensor.
    With ``root_depth_index`` (the released code's convention (b)) a = ``root_depths`` of t.
    """
    batch, num_nodes, num_leaves = path_length.shape
    start = spans[..., 0]
    span_length = (spans[..., 1] - start).clamp(min=0)
    pair_batch, pair_node, pair_below = below.nonzero(as_tuple=True)  # (i, t) with t below i
    leaves_per_pair = span_length[pair_batch, pair_below]
    pair = torch.repeat_interleave(leaves_per_pair)  # the pair of each (i, t, j)
    b, i, t = pair_batch[pair], pair_node[pair], pair_below[pair]
    first = (leaves_per_pair.cumsum(0) - leaves_per_pair)[pair]
    rank = torch.arange(pair.numel(), device=spans.device) - first  # j - start_t
    j = start[b, t] + rank
    vertical = root_depths(below)[b, t] if root_depth_index else path_length[b, t, j]
    vertical = vertical.clamp(max=vertical_rows - 1)
    horizontal = vertical_rows + (rank + 1).clamp(max=horizontal_rows - 1)
    row = (b * num_nodes + i) * (vertical_rows + horizontal_rows)
    weight_index = (b * num_nodes + i) * num_leaves + j
    return EmbeddingPaths(
        weight_index=torch.cat([weight_index, weight_index]),
        target=torch.cat([row + vertical, row + horizontal]),
        vertical_rows=vertical_rows,
        horizontal_rows=horizontal_rows,
    )


def build_accumulation_plan(
    spans: Tensor, num_leaves: int, embedding_rows: Optional[tuple] = None, dtype=torch.float32,
    conventions: AccumulationConventions = PAPER,
) -> AccumulationPlan:
    """Everything of Eqs. 5-10 that depends on the tree alone, for one batch.

    Args:
        spans: B x M x 2 ``[start, end)`` leaf spans (nodes in any order, spans distinct and
            nested; a padded node has start == end).
        num_leaves: N, the length of the leaf axis the spans index.
        embedding_rows: ``(Kv, Kh)``, the rows of E^v and E^h, or None without embeddings.
        conventions: conventions (a) and (b) of the released code change the plan.
    """
    spans = spans.long()
    exact = torch.promote_types(dtype, torch.float32)  # the scales of half models, rounded once
    cover = interpolation_cover(spans, num_leaves)
    below = subtree_relation(spans)
    path_length = branch_path_lengths(cover, below)
    scale = path_count_aggregation_scale if conventions.path_count_average else aggregation_scale
    plan = AccumulationPlan(
        cover=cover,
        below=below,
        leaf_scale=scale(spans, cover, path_length, exact).to(dtype),
        path_length=path_length,
        covered_leaves=cover.any(dim=1),
        leaf_cover=cover.transpose(1, 2).to(dtype).contiguous(),
        below_weight=below.to(dtype),
    )
    if embedding_rows is not None:
        plan.embedding_paths = hierarchical_embedding_paths(
            spans, below, path_length, *embedding_rows, conventions.root_depth_index)
    return plan


def embedding_weights(alpha: Tensor, paths: EmbeddingPaths) -> Tensor:
    """gamma (B x M x (Kv + Kh)): how much of each row of E^v (first Kv columns) and of E^h (the
    others) node i accumulates (Eqs. 9-10 through Eqs. 6-7). With alpha per group of values
    (B x G x M x N, ``accumulate``) gamma is per group too (B x G x M x (Kv + Kh))."""
    if alpha.dim() == 4:
        batch, heads, num_nodes, num_leaves = alpha.shape
        per_head = alpha.transpose(0, 1).reshape(heads, batch, num_nodes, num_leaves)
        return torch.stack([embedding_weights(a, paths) for a in per_head], dim=1)
    batch, num_nodes, _ = alpha.shape
    rows = paths.vertical_rows + paths.horizontal_rows
    weights = alpha.reshape(-1)[paths.weight_index]
    gamma = alpha.new_zeros(batch * num_nodes * rows).index_add(0, paths.target, weights)
    return gamma.view(batch, num_nodes, rows)


def accumulate(plan: AccumulationPlan, leaves: Tensor, nodes: Tensor, leaf_weights: Tensor,
               vertical: Optional[Tensor] = None, horizontal: Optional[Tensor] = None) -> Tensor:
    """Eq. 8 (Eq. 10 with embeddings): N-bar' = V(U(F(L, N, R) + E), w), through ``plan``.

    The d values are G groups of d/G, each accumulated with its own w: the paper's w, one for
    every head, is G = 1; the authors' released code (convention (c), their ``dwstack_linear``
    and ``accumulate_rightward`` in src/modules/nstack_merge_tree_attention.py) has one w per
    head, w = L U + b, G = H groups of d/H.

    Args:
        leaves: B x N x d leaf values; nodes: B x M x d node values (any strides).
        leaf_weights: B x N, the w of Eq. 7, or B x N x G, one w per group (entries of leaves
            no node covers are ignored).
        vertical, horizontal: Kv x e/2 and Kh x e/2 rows of E^v and E^h, or None. d/G must be a
            multiple of e: [E^v_a ; E^h_b] is added to every e-wide slice of the values, which
            is how the embeddings are shared across attention heads.
    Returns:
        B x M x d; rows of padded nodes are 0.
    """
    dtype = leaves.dtype
    (batch, _, width), num_nodes = leaves.shape, nodes.size(1)
    weights = leaf_weights.unsqueeze(-1) if leaf_weights.dim() == 2 else leaf_weights  # B x N x G
    groups = weights.size(-1)
    # where, not a product alone: w may be anything (even NaN) at leaves no node covers.
    weights = torch.where(plan.covered_leaves.unsqueeze(-1), weights.to(dtype), 0.0)
    # alpha_ij = w_j kappa_ij: B x G x M x N, 0 off the cover
    alpha = weights.permute(0, 2, 1).unsqueeze(2) * plan.leaf_scale.to(dtype).unsqueeze(1)
    # beta_it = sum over the leaves j of node t of alpha_ij, for t below i (t on P(i, j)).
    beta = alpha @ plan.leaf_cover.to(dtype).unsqueeze(1)
    beta = beta * plan.below_weight.to(dtype).unsqueeze(1)
    # B x L x d -> (B G) x L x d/G: the groups of every batch row, consecutive
    split = lambda x: x.reshape(batch, x.size(1), groups, width // groups).transpose(1, 2)
    flat = lambda x: x.flatten(0, 1)
    out = torch.baddbmm(torch.bmm(flat(beta), flat(split(nodes))), flat(alpha),
                        flat(split(leaves)))
    out = out.view(batch, groups, num_nodes, width // groups)  # B x G x M x d/G
    if vertical is not None:
        if plan.embedding_paths is None:
            raise ValueError("the accumulation plan was built without embedding rows")
        gamma = embedding_weights(alpha, plan.embedding_paths)  # B x G x M x (Kv + Kh)
        embedded = gamma @ torch.block_diag(vertical, horizontal).to(dtype)  # B x G x M x e
        e = embedded.size(-1)
        shared = out.view(batch, groups, num_nodes, width // groups // e, e)  # e-wide slices
        out = shared + embedded.unsqueeze(3)
    return out.transpose(1, 2).reshape(batch, num_nodes, width)


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
