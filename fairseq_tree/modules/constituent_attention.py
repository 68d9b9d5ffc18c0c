"""Constituent attention (Wang et al., "Tree Transformer: Integrating Tree Structures into
Self-Attention", EMNLP 2019, Sections 4-5).

Each layer l computes link probabilities a^l between adjacent tokens (neighbouring attention,
Eqs. 5-7, under the hierarchical constraint of Eq. 8), turns them into the constituent prior C^l
(Eqs. 3-4) and multiplies its attention probabilities by C^l (Eq. 2), one C^l for all heads.

Convention for the diagonal: C_ii = 1, the empty product of Eq. 3, so a token may attend to
itself. (The authors' code puts about 1e-9 plus the neighbouring attention there, which all but
removes attention to oneself; the paper does not say so.)

Padding: a link touching a padded position has a = 0 and takes no part in C (its log is read as
0), and padded keys are masked out of the softmax, so a sentence gets the same prior and output
alone and in a padded batch.
"""

import math
from typing import List, Optional

import torch
import torch.nn.functional as F
from fairseq.modules.transformer_layer import TransformerEncoderLayerBase
from torch import Tensor, nn

from fairseq_tree.modules.heads import MultiheadProjections, returned_weights


def neighbour_scores(link_query: Tensor, link_key: Tensor) -> tuple[Tensor, Tensor]:
    """Eq. 5: s_{i,i+1} = q_i . k_{i+1} / d, with d = d_model / 2, towards both neighbours.

    Args: link_query, link_key: B x T x C (the link projections, not the attention's).
    Returns: ``right`` = s_{i,i+1} and ``left`` = s_{i+1,i}, both B x (T-1), entry i for the
        link between tokens i and i+1.
    """
    scale = link_query.size(-1) / 2
    right = (link_query[:, :-1] * link_key[:, 1:]).sum(-1) / scale
    left = (link_query[:, 1:] * link_key[:, :-1]).sum(-1) / scale
    return right, left


def neighbour_attention(right: Tensor, left: Tensor, padding: Tensor) -> tuple[Tensor, Tensor]:
    """Eq. 6: p_{i,i+1}, p_{i,i-1} = softmax(s_{i,i+1}, s_{i,i-1}), per token, over the
    neighbours it has (the first and last real tokens have one, so that one gets 1).

    Args: right, left: B x (T-1) scores of ``neighbour_scores``; padding: B x T, True at pads.
    Returns: log p_{i,i+1} and log p_{i+1,i}, both B x (T-1); very negative where the neighbour
        is padding.
    """
    real = ~padding
    link_real = real[:, :-1] & real[:, 1:]  # B x (T-1)
    lowest = torch.finfo(right.dtype).min  # finite, so that a row without neighbours gives no NaN
    # Scores of each token towards its right (column 0) and left (column 1) neighbour: B x T x 2.
    towards_right = F.pad(right.masked_fill(~link_real, lowest), (0, 1), value=lowest)
    towards_left = F.pad(left.masked_fill(~link_real, lowest), (1, 0), value=lowest)
    log_p = torch.stack([towards_right, towards_left], dim=-1).log_softmax(dim=-1)
    return log_p[:, :-1, 0], log_p[:, 1:, 1]


def link_probability(log_p_right: Tensor, log_p_left: Tensor, padding: Tensor) -> Tensor:
    """Eq. 7: a-hat_i = sqrt(p_{i,i+1} p_{i+1,i}), the link between tokens i and i+1 when they
    attend to each other; 0 for a link touching padding. Computed from logs (the square root
    has no finite gradient at 0). B x (T-1) -> B x (T-1)."""
    link_real = ~padding[:, :-1] & ~padding[:, 1:]
    return torch.exp(0.5 * (log_p_right + log_p_left)).masked_fill(~link_real, 0.0)


def hierarchical_constraint(previous: Tensor, current: Tensor) -> Tensor:
    """Eq. 8: a^l = a^{l-1} + (1 - a^{l-1}) a-hat^l (a^{-1} = 0): a link never weakens from one
    layer to the next. B x (T-1) each."""
    return previous + (1.0 - previous) * current


def constituent_prior(links: Tensor, padding: Tensor) -> Tensor:
    """Eqs. 3-4: C_ij = prod_{k=i}^{j-1} a_k = exp(sum_{k=i}^{j-1} log a_k), symmetric, C_ii = 1.

    With prefix sums S_j = sum_{k<j} log a_k, which never increase, C_ij = exp(-|S_j - S_i|) for
    every i, j at once: no loop over spans. Computed in float32 whatever the input's type.

    Args: links: B x (T-1) link probabilities a; padding: B x T, True at pads.
    Returns: B x T x T.
    """
    link_real = ~padding[:, :-1] & ~padding[:, 1:]
    log_a = torch.log(links.float().clamp(min=1e-30)).clamp(max=0.0).masked_fill(~link_real, 0.0)
    prefix = F.pad(log_a.cumsum(dim=-1), (1, 0))  # B x T: S_0 = 0
    return torch.exp(-(prefix.unsqueeze(2) - prefix.unsqueeze(1)).abs())


def constituent_attention_weights(scores: Tensor, prior: Tensor) -> Tensor:
    """Eq. 2: E = C (elementwise) softmax(Q K^T / sqrt(d_k)), not renormalised; one prior for
    every head. scores: B x H x T x T (padded keys already at -inf); prior: B x T x T."""
    return prior.unsqueeze(1) * scores.float().softmax(dim=-1)


class LinkChain:
    """The link probabilities of one forward pass, handed from each layer to the next (Eq. 8
    needs a^{l-1}). The encoder starts it with the batch's padding; each layer appends a^l."""

    def __init__(self):
        self.padding: Optional[Tensor] = None
        self.links: List[Tensor] = []

    def start(self, padding: Tensor):
        """A new batch: padding B x T; a^{-1} = 0."""
        self.padding, self.links = padding, []

    def previous(self, like: Tensor) -> Tensor:
        """a^{l-1}, B x (T-1) (zeros before the first layer)."""
        return self.links[-1] if self.links else like.new_zeros(like.shape)

    def stacked(self) -> Tensor:
        """Every layer's a^l: L x B x (T-1)."""
        return torch.stack(self.links)


class NeighbouringAttention(nn.Module):
    """Section 5.1: the link query and key projections (d_model each, their own parameters),
    after a LayerNorm of the layer input as in the authors' code. B x T x C -> a-hat B x (T-1)."""

    def __init__(self, embed_dim: int):
        super().__init__()
        self.layer_norm = nn.LayerNorm(embed_dim)
        self.link_query = nn.Linear(embed_dim, embed_dim)
        self.link_key = nn.Linear(embed_dim, embed_dim)

    def forward(self, x: Tensor, padding: Tensor) -> Tensor:
        normed = self.layer_norm(x)
        right, left = neighbour_scores(self.link_query(normed), self.link_key(normed))
        return link_probability(*neighbour_attention(right, left, padding), padding)


class ConstituentSelfAttention(MultiheadProjections):
    """Multi-head self-attention constrained by the constituent prior (Eqs. 2-8), a drop-in for
    fairseq's ``MultiheadAttention`` in an encoder layer (same call, T x B x C in and out). It
    reads a^{l-1} and the padding from the shared ``LinkChain`` and appends its a^l there."""

    def __init__(self, embed_dim: int, num_heads: int, chain: LinkChain, dropout: float = 0.0):
        super().__init__(embed_dim, num_heads, dropout)
        self.chain = chain
        self.neighbouring_attention = NeighbouringAttention(embed_dim)

    def forward(self, query: Tensor, key: Optional[Tensor] = None, value: Optional[Tensor] = None,
                key_padding_mask: Optional[Tensor] = None, need_weights: bool = False,
                attn_mask: Optional[Tensor] = None, need_head_weights: bool = False, **unused):
        """query: T x B x C (key and value are the same tensor: self-attention). Returns the
        output T x B x C and, with ``need_weights``, E of Eq. 2 averaged over heads (B x T x T;
        H x B x T x T with ``need_head_weights``); its rows sum to at most 1 (not
        renormalised)."""
        if attn_mask is not None:
            raise ValueError("constituent attention takes no attn_mask")
        padding = self.chain.padding  # B x T, set by the encoder for this batch
        x = query.transpose(0, 1)  # B x T x C
        current = self.neighbouring_attention(x, padding)
        links = hierarchical_constraint(self.chain.previous(current), current)
        self.chain.links.append(links)
        q, k, v = (self.split_heads(proj(query)) for proj in (self.q_proj, self.k_proj,
                                                              self.v_proj))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)  # B x H x T x T
        scores = scores.masked_fill(padding[:, None, None, :], float("-inf"))
        weights = constituent_attention_weights(scores, constituent_prior(links, padding))
        attn = F.dropout(weights, p=self.dropout, training=self.training).type_as(v)
        out = self.merge_heads(torch.matmul(attn, v))  # T x B x C
        need_weights = need_weights or need_head_weights
        return self.out_proj(out), (returned_weights(weights, need_head_weights)
                                    if need_weights else None)


class ConstituentEncoderLayer(TransformerEncoderLayerBase):
    """fairseq's encoder layer (residuals, LayerNorms, FFN unchanged) with constituent
    self-attention in place of multi-head attention."""

    def __init__(self, cfg, chain: LinkChain):
        self.chain = chain  # read by build_self_attention, which fairseq's __init__ calls
        super().__init__(cfg)

    def build_self_attention(self, embed_dim, cfg):
        return ConstituentSelfAttention(embed_dim, cfg.encoder.attention_heads, self.chain,
                                        dropout=cfg.attention_dropout)
