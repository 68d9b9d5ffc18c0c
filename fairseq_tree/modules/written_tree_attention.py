"""Decoder self-attention under the written tree's masks (``written_tree``): fairseq's
``MultiheadAttention`` with a mask per example instead of the one causal mask of a batch."""

from contextlib import contextmanager
from typing import Iterable, Optional

import torch
from fairseq.modules import MultiheadAttention
from fairseq.modules.transformer_layer import TransformerDecoderLayerBase
from torch import Tensor, nn

from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.modules.tree_transformer_layer import TreeDecoderLayer
from fairseq_tree.modules.written_tree import WrittenTreeMasks, depth_differences


class WrittenTreeSelfAttention(MultiheadAttention):
    """Self-attention that, while a decoder holds the written tree's masks on it
    (``written_tree_masks``), attends where they allow, in place of the causal mask; with
    ``depth_clip`` > 0, plus a learned bias per head on the clipped difference of tree depth
    between query and key (Transformer Grammars' relative positions, ``depth_differences``).

    fairseq's attention takes a per-example mask of (bsz * heads, queries, keys) in its full
    pass (PyTorch's attention); its incremental pass adds one 2D mask to every example, so
    there the mask is added through its ``apply_sparse_mask`` hook instead."""

    tree: Optional[WrittenTreeMasks] = None
    blocked: Optional[Tensor] = None  # (bsz * heads, queries, keys), True where blocked
    _incremental_mask: Optional[Tensor] = None

    def __init__(self, *args, depth_clip: int = 0, **kwargs):
        super().__init__(*args, **kwargs)
        self.depth_clip = depth_clip
        self.depth_bias = nn.Embedding(2 * depth_clip + 1, self.num_heads) if depth_clip else None
        if self.depth_bias is not None:
            nn.init.zeros_(self.depth_bias.weight)  # training starts from the masks alone

    def tree_mask(self, dtype) -> Tensor:
        """The mask of this pass: True where blocked, or additive with the depth bias."""
        if self.depth_bias is None:
            return self.blocked
        differences = depth_differences(self.tree.query_levels, self.tree.key_levels,
                                        self.depth_clip)
        bias = self.depth_bias(differences + self.depth_clip).permute(0, 3, 1, 2)
        return bias.reshape(self.blocked.shape).to(dtype).masked_fill(self.blocked, float("-inf"))

    def forward(self, query, key, value, key_padding_mask=None, incremental_state=None,
                need_weights=True, static_kv=False, attn_mask=None, before_softmax=False,
                need_head_weights=False):
        if self.blocked is not None:
            attn_mask = self.tree_mask(query.dtype)
            if incremental_state is not None:
                if attn_mask.dtype == torch.bool:
                    attn_mask = torch.zeros(attn_mask.shape, dtype=query.dtype,
                                            device=query.device).masked_fill(attn_mask,
                                                                             float("-inf"))
                self._incremental_mask, attn_mask = attn_mask, None
        try:
            return super().forward(query, key, value, key_padding_mask=key_padding_mask,
                                   incremental_state=incremental_state, need_weights=need_weights,
                                   static_kv=static_kv, attn_mask=attn_mask,
                                   before_softmax=before_softmax,
                                   need_head_weights=need_head_weights)
        finally:
            self._incremental_mask = None

    def apply_sparse_mask(self, attn_weights, tgt_len: int, src_len: int, bsz: int):
        if self._incremental_mask is not None:
            return attn_weights + self._incremental_mask
        return attn_weights


@contextmanager
def written_tree_masks(attentions: Iterable[WrittenTreeSelfAttention], tree: WrittenTreeMasks):
    """Hold the written tree's masks (``WrittenTreeState``'s, the same for every head) on
    ``attentions`` for one decoder pass."""
    attentions = list(attentions)
    heads = {attention.num_heads for attention in attentions}
    blocked = {count: ~tree.allowed.repeat_interleave(count, dim=0) for count in heads}
    for attention in attentions:
        attention.tree, attention.blocked = tree, blocked[attention.num_heads]
    try:
        yield
    finally:
        for attention in attentions:
            attention.tree = attention.blocked = None


class WrittenTreeAttentionLayer:
    """A decoder layer (mixed in before fairseq's) whose self-attention is
    ``WrittenTreeSelfAttention``, the same weights as fairseq's (and its depth bias, with
    ``--tree-depth-bias``)."""

    def build_self_attention(self, embed_dim, cfg, add_bias_kv=False, add_zero_attn=False):
        if cfg.cross_self_attention:
            raise FairseqTreeError("--cross-self-attention is not supported by the syntactic "
                                   "decoder")
        return WrittenTreeSelfAttention(
            embed_dim, cfg.decoder.attention_heads, dropout=cfg.attention_dropout,
            add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn, self_attention=True,
            q_noise=self.quant_noise, qn_block_size=self.quant_noise_block_size,
            depth_clip=getattr(cfg, "tree_depth_bias", 0),
        )


class SyntacticDecoderLayer(WrittenTreeAttentionLayer, TransformerDecoderLayerBase):
    """fairseq's decoder layer attending over the written tree."""


class SyntacticTreeDecoderLayer(WrittenTreeAttentionLayer, TreeDecoderLayer):
    """tree2seq's decoder layer (tree cross-attention) attending over the written tree."""
