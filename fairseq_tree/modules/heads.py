"""The head plumbing the attentions of this plugin share: projections, heads, attention weights.

Every attention here keeps fairseq's ``MultiheadAttention`` contract: T x B x C in and out, its
projections by name (``q_proj``, ``k_proj``, ``v_proj``, ``out_proj``; those an attention packs
into one ``in_proj_weight``, as torch's ``nn.MultiheadAttention`` does, are views of its rows),
and its returned weights:
None unless ``need_weights`` (or ``need_head_weights``) is asked, then the probabilities of
each query over the attention's keys, B x T x S averaged over heads, or H x B x T x S per head
with ``need_head_weights`` (``returned_weights``). Weights are computed only when asked.
"""

from typing import NamedTuple, Optional, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def returned_weights(probs: Tensor, need_head_weights: bool) -> Tensor:
    """fairseq's returned attention weights from B x H x T x S probabilities: H x B x T x S with
    ``need_head_weights``, else the mean over heads, B x T x S."""
    return probs.transpose(0, 1) if need_head_weights else probs.mean(dim=1)


class Projection(NamedTuple):
    """Rows of a packed input projection, read as an ``nn.Linear``: views of its weight and
    bias (writing into them writes into the packed parameters)."""

    weight: Tensor
    bias: Tensor

    def __call__(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)


INPUT_PROJECTIONS = ("q_proj", "k_proj", "v_proj")


class MultiheadProjections(nn.Module):
    """W^Q, W^K, W^V and W^O of ``num_heads`` heads (keys and values read ``kdim`` features),
    created in that order with torch's default initialisation (a subclass re-initialises them),
    and the reshapes between T x B x C and B x H x T x D.

    The input projections named in ``packed`` (of ``INPUT_PROJECTIONS``, reading one width) are
    rows of one parameter ``in_proj_weight`` (bias ``in_proj_bias``), in that order, with the
    same values as apart: one tensor for the optimizer and one product without concatenating
    weights at every call. ``self.q_proj`` (say) is then a ``Projection``, a view of its rows."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0,
                 kdim: Optional[int] = None, packed: Sequence[str] = ()):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by {num_heads} heads")
        kdim = kdim or embed_dim
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.dropout = dropout
        self.packed = tuple(name for name in INPUT_PROJECTIONS if name in packed)
        in_features = {"q_proj": embed_dim, "k_proj": kdim, "v_proj": kdim}
        if len({in_features[name] for name in self.packed}) > 1:
            raise ValueError(f"packed projections {self.packed} read different widths")
        rows = []
        for name in INPUT_PROJECTIONS:  # drawn in this order whether packed or not
            linear = nn.Linear(in_features[name], embed_dim)
            if name in self.packed:
                rows.append(linear)
            else:
                setattr(self, name, linear)
        if rows:
            self.in_proj_weight = nn.Parameter(torch.cat([p.weight.detach() for p in rows]))
            self.in_proj_bias = nn.Parameter(torch.cat([p.bias.detach() for p in rows]))
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def __getattr__(self, name: str):
        packed = self.__dict__.get("packed", ())
        if name in packed:
            rows = slice(packed.index(name) * self.embed_dim,
                         (packed.index(name) + 1) * self.embed_dim)
            return Projection(self.in_proj_weight[rows], self.in_proj_bias[rows])
        return super().__getattr__(name)

    def split_heads(self, x: Tensor) -> Tensor:
        """T x B x C -> B x H x T x D (a view)."""
        length, batch, _ = x.shape
        return x.view(length, batch, self.num_heads, self.head_dim).permute(1, 2, 0, 3)

    def merge_heads(self, x: Tensor) -> Tensor:
        """B x H x T x D -> T x B x C, the inverse of ``split_heads``."""
        batch, _, length, _ = x.shape
        return x.permute(2, 0, 1, 3).reshape(length, batch, self.embed_dim)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor, need_weights: bool):
        """Scaled dot-product attention of T x B' x C projected queries over B x H x S x D keys
        and values, where B' = c B: the c consecutive query rows of each key row (beam copies of
        one sentence) share its keys. ``mask`` is additive, broadcastable to B x H x T' x S.

        Returns the T x B' x H x D context (strided) and, with ``need_weights``, the
        B' x H x T x S attention probabilities (without, None: fused SDPA, nothing extra)."""
        length, rows, _ = q.shape
        batch = k.size(0)
        copies = rows // batch
        if copies == 1:  # training: no copies, no copy of q
            q = self.split_heads(q)
        else:  # T x (B c) x C -> B x H x (c T) x D: the copies of a sentence are more queries
            q = q.view(length, batch, copies, self.num_heads, self.head_dim).permute(1, 3, 2, 0, 4)
            q = q.reshape(batch, self.num_heads, copies * length, self.head_dim)
        dropout = self.dropout if self.training else 0.0
        weights = None
        if not need_weights:
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)
        else:
            scores = (q @ k.transpose(-1, -2)) * self.head_dim**-0.5
            # softmax in float32 at least, as fairseq's attention does for half precision
            scores = scores.to(torch.promote_types(scores.dtype, torch.float32)) + mask
            weights = torch.softmax(scores, dim=-1).to(q.dtype)
            context = F.dropout(weights, p=dropout, training=self.training) @ v
            weights = weights.view(batch, self.num_heads, copies, length, -1).transpose(1, 2)
            weights = weights.reshape(rows, self.num_heads, length, k.size(2))
        if copies == 1:
            return context.permute(2, 0, 1, 3), weights
        context = context.view(batch, self.num_heads, copies, length, self.head_dim)
        context = context.permute(3, 0, 2, 1, 4)
        context = context.reshape(length, rows, self.num_heads, self.head_dim)
        return context, weights

