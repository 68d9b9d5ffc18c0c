"""Hierarchical accumulation the way the paper writes it and the authors' code computes it:
materialising S ((m+1) x n x d per sentence) with vectorised tensor operations. The baseline of
``bench/accumulation.py``; tests check it against the literal equations."""

import torch


def dense_accumulation(leaves, nodes, spans, leaf_weights, vertical=None, horizontal=None):
    """Eqs. 5-10 on a B x M x N x D tensor S; same contract as
    ``fairseq_tree.modules.hierarchical_accumulation.hierarchical_accumulation``."""
    n = leaves.size(1)
    start, end = spans[..., 0], spans[..., 1]
    leaf = torch.arange(n, device=spans.device)
    cover = (leaf >= start.unsqueeze(-1)) & (leaf < end.unsqueeze(-1))  # B x M x N
    real = start < end
    below = ((start.unsqueeze(1) >= start.unsqueeze(2)) & (end.unsqueeze(1) <= end.unsqueeze(2))
             & real.unsqueeze(1) & real.unsqueeze(2)).to(leaves.dtype)  # B x M(i) x M(t)
    mask = cover.unsqueeze(-1).to(leaves.dtype)
    S = nodes.unsqueeze(2) * mask  # Eq. 5: B x M x N x D
    path_length = torch.einsum("bit,btj->bij", below, cover.to(leaves.dtype))
    if vertical is not None:  # Eq. 9
        a = path_length.long().clamp(max=vertical.size(0) - 1)
        h = (leaf - start.unsqueeze(-1) + 1).clamp(min=0, max=horizontal.size(0) - 1)
        S = S + torch.cat([vertical[a], horizontal[h]], dim=-1) * mask
    branch_sum = leaves.unsqueeze(1) + torch.einsum("bit,btjd->bijd", below, S)  # Eq. 6
    branch_mean = branch_sum / (1 + path_length).unsqueeze(-1)
    weights = torch.where(cover, leaf_weights.unsqueeze(1), 0.0).unsqueeze(-1)
    span_length = (end - start).clamp(min=1).to(leaves.dtype).unsqueeze(-1)
    return (branch_mean * weights).sum(2) / span_length  # Eq. 7
