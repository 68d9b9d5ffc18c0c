"""The relations between the nodes and leaves of a batch of trees that hierarchical accumulation
reads (Nguyen et al., ICLR 2020, Section 4.2), computed from the node spans alone.

They sit with the data because they depend on the trees and nothing else: the collater computes
the one part whose size depends on the trees (``embedding_paths``, the (i, t, j) cells of
Eq. 9) on the CPU, where the batch is made, so that the model never waits for the device to
learn how many there are. The model builds the rest on the device (``modules.
hierarchical_accumulation.build_accumulation_plan``) from the torch functions here.

Spans are B x M x 2 ``[start, end)`` leaf spans (nodes in any order, spans distinct and nested);
a padded node has start == end: it covers no leaf, lies below no node and has no path.
"""

import numpy as np
import torch
from torch import Tensor

# The columns of ``embedding_paths``: the batch row, node i, leaf j, |P(t, j)| (Eq. 9's vertical
# row), the depth of t from the root (the released code's vertical row, convention (b)) and
# |H_j^t| (Eq. 9's horizontal row).
ROW, NODE, LEAF, PATH_LENGTH, ROOT_DEPTH, RANK = range(6)
PATH_COLUMNS = 6


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


def root_depths(below: np.ndarray) -> np.ndarray:
    """B x M: the depth of each node counted from the root, the root 1 (the nodes whose subtree
    holds it, itself included); 0 for padded nodes. The vertical row of Eq. 9 in the authors'
    released code (convention (b)), the same for every leaf under the node.

    There (src/modules/nstack_merge_tree_attention.py, ``MergeHierarchicalEmbedding.forward``)
    the vertical index is a cumulative count of the node mask taken from the root's end of the
    node axis (src/binarization.py stores a tree's nodes children first, reversing their
    breadth-first order), so it counts node t and the nodes above it,
    not the nodes from t down to leaf j."""
    return below.sum(axis=1)


def embedding_paths(spans: Tensor) -> Tensor:
    """Eq. 9 (hierarchical embeddings E) along Eq. 6's branches: every cell (t, j) of S that node
    i accumulates, for every node i, node t on a path below i (t = i included) and leaf j in
    span_t, with the rows of E^v and E^h it adds.

    Cell (t, j) of S gets E_{t,j} = [E^v_a ; E^h_b] with a = |V_j^t| = |P(t, j)| (the nodes from
    t down to leaf j, t included) and b = |H_j^t| = j - start_t + 1 (the rank of leaf j in
    span_t). Eq. 10 adds E to S before the branch averages, so node i receives E_{t,j} for every
    t on P(i, j). As spans nest, the nodes over leaf j form a chain, and |P(t, j)| is the depth
    of the deepest node over j less the depth of t, plus 1.

    Computed with numpy, one thread, wherever ``spans`` is: the collater calls it beside the
    training (fairseq collates in a thread of the training process, where torch's own threads
    would compete with the training's).

    Returns:
        P x 6 long (``PATH_COLUMNS``), on the CPU: the batch row, i, j, |P(t, j)|, t's depth
        from the root (``root_depths``), |H_j^t|, one row per (i, t, j) of the batch, as many as
        the trees have (no padding: one deep tree does not multiply the others' rows).
    """
    spans = spans.detach().cpu().long().numpy()
    start, end = spans[..., 0], spans[..., 1]
    real = start < end
    below = ((start[:, None, :] >= start[:, :, None]) & (end[:, None, :] <= end[:, :, None])
             & real[:, :, None] & real[:, None, :])  # (b, i, t): t below i
    depth = root_depths(below)
    leaf = np.arange(max(int(end.max(initial=0)), 1))
    cover = (leaf >= start[..., None]) & (leaf < end[..., None])  # B x M x N
    deepest = np.where(cover, depth[..., None], 0).max(axis=1, initial=0)  # B x N
    pair_batch, pair_node, pair_below = np.nonzero(below)
    leaves_per_pair = (end - start)[pair_batch, pair_below]
    pair = np.repeat(np.arange(pair_batch.size), leaves_per_pair)  # the pair of each (i, t, j)
    b, i, t = pair_batch[pair], pair_node[pair], pair_below[pair]
    rank = np.arange(pair.size) - (np.cumsum(leaves_per_pair) - leaves_per_pair)[pair]
    j = start[b, t] + rank
    paths = np.stack([b, i, j, deepest[b, j] - depth[b, t] + 1, depth[b, t], rank + 1], -1)
    return torch.from_numpy(paths.astype(np.int64, copy=False).reshape(-1, PATH_COLUMNS))


def select_rows(paths: Tensor, rows: Tensor) -> Tensor:
    """The ``embedding_paths`` of the batch made of rows ``rows`` (distinct) of this one, in that
    order: the paths of the other rows dropped, the ROW column renamed."""
    rows = rows.to(paths.device).long()
    size = max(int(rows.max()) if rows.numel() else -1,
               int(paths[:, ROW].max()) if paths.numel() else -1) + 1
    rename = torch.full((size,), -1, dtype=torch.long, device=paths.device)
    rename[rows] = torch.arange(rows.numel(), device=paths.device)
    new_row = rename[paths[:, ROW]]
    kept = paths[new_row >= 0].clone()
    kept[:, ROW] = new_row[new_row >= 0]
    return kept
