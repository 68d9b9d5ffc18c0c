"""Decoder self-attention under the written tree's masks (``written_tree``): fairseq's
``MultiheadAttention`` with a mask per example instead of the one causal mask of a batch."""

from contextlib import contextmanager
from typing import Iterable, Optional

import torch
from fairseq.modules import MultiheadAttention
from fairseq.modules.transformer_layer import TransformerDecoderLayerBase
from torch import Tensor

from fairseq_tree.modules.tree_transformer_layer import TreeDecoderLayer


class WrittenTreeSelfAttention(MultiheadAttention):
    """Self-attention that, while a decoder holds ``blocked`` on it (``written_tree_masks``),
    attends where that (bsz * heads, queries, keys) mask is False, in place of the causal mask.

    fairseq's attention takes a per-example mask in its full pass (PyTorch's attention); its
    incremental pass adds one 2D mask to every example, so there the mask is added through its
    ``apply_sparse_mask`` hook instead."""

    blocked: Optional[Tensor] = None
    _incremental_mask: Optional[Tensor] = None

    def forward(self, query, key, value, key_padding_mask=None, incremental_state=None,
                need_weights=True, static_kv=False, attn_mask=None, before_softmax=False,
                need_head_weights=False):
        if self.blocked is not None:
            attn_mask = self.blocked
            if incremental_state is not None:
                self._incremental_mask = torch.zeros(
                    attn_mask.shape, dtype=query.dtype, device=query.device,
                ).masked_fill(attn_mask, float("-inf"))
                attn_mask = None
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
def written_tree_masks(attentions: Iterable[WrittenTreeSelfAttention], masks: Tensor):
    """Hold the (bsz, queries, keys) ``masks`` (True where a query may attend, the same for
    every head) on ``attentions`` for one decoder pass."""
    attentions = list(attentions)
    heads = {attention.num_heads for attention in attentions}
    blocked = {count: ~masks.repeat_interleave(count, dim=0) for count in heads}
    for attention in attentions:
        attention.blocked = blocked[attention.num_heads]
    try:
        yield
    finally:
        for attention in attentions:
            attention.blocked = None


class WrittenTreeAttentionLayer:
    """A decoder layer (mixed in before fairseq's) whose self-attention is
    ``WrittenTreeSelfAttention``, the same weights as fairseq's."""

    def build_self_attention(self, embed_dim, cfg, add_bias_kv=False, add_zero_attn=False):
        if cfg.cross_self_attention:
            raise ValueError("--cross-self-attention is not supported by the syntactic decoder")
        return WrittenTreeSelfAttention(
            embed_dim, cfg.decoder.attention_heads, dropout=cfg.attention_dropout,
            add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn, self_attention=True,
            q_noise=self.quant_noise, qn_block_size=self.quant_noise_block_size,
        )


class SyntacticDecoderLayer(WrittenTreeAttentionLayer, TransformerDecoderLayerBase):
    """fairseq's decoder layer attending over the written tree."""


class SyntacticTreeDecoderLayer(WrittenTreeAttentionLayer, TreeDecoderLayer):
    """tree2seq's decoder layer (tree cross-attention) attending over the written tree."""
