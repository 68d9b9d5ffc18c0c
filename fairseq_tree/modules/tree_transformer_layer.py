"""fairseq's Transformer layers with tree attention in place of multi-head attention.

Residual connections, LayerNorm and the feed-forward network are fairseq's own, applied alike to
leaves and nodes (they share all parameters, Section 4.3).
"""

from typing import Optional

from fairseq.modules.transformer_layer import (
    TransformerDecoderLayerBase,
    TransformerEncoderLayerBase,
)
from torch import Tensor

from fairseq_tree.modules.hierarchical_accumulation import PAPER, AccumulationConventions
from fairseq_tree.modules.source_tree import SourceTree
from fairseq_tree.modules.tree_attention import TreeCrossAttention, TreeSelfAttention


class TreeEncoderLayer(TransformerEncoderLayerBase):
    """Encoder layer over [leaves; nodes] with tree self-attention (Eqs. 11-20)."""

    def __init__(self, cfg, hier_embed_rows: Optional[int], subtree_masking: bool,
                 conventions: AccumulationConventions = PAPER):
        # Read by build_self_attention, which fairseq's __init__ calls.
        self.hier_embed_rows, self.subtree_masking = hier_embed_rows, subtree_masking
        self.conventions = conventions
        super().__init__(cfg)

    def build_self_attention(self, embed_dim, cfg):
        return TreeSelfAttention(
            embed_dim, cfg.encoder.attention_heads, dropout=cfg.attention_dropout,
            hier_embed_rows=self.hier_embed_rows, subtree_masking=self.subtree_masking,
            conventions=self.conventions,
        )

    def forward(self, x: Tensor, tree: SourceTree):
        """x: (N + M) x B x C, leaves then nodes. fairseq's layer passes its padding-mask
        argument straight to self-attention, which takes the tree in that place."""
        return super().forward(x, encoder_padding_mask=tree)


class TreeDecoderLayer(TransformerDecoderLayerBase):
    """Decoder layer whose encoder attention is tree cross-attention (Eqs. 21-24). Its
    ``encoder_out`` argument is the ``SourceTree`` (see ``TreeDecoder.extract_features``)."""

    def __init__(self, cfg, hier_embed_rows: Optional[int], no_encoder_attn: bool = False,
                 conventions: AccumulationConventions = PAPER, nodes_only: bool = False):
        # read by build_encoder_attention
        self.hier_embed_rows, self.conventions = hier_embed_rows, conventions
        self.nodes_only = nodes_only
        super().__init__(cfg, no_encoder_attn=no_encoder_attn)

    def build_encoder_attention(self, embed_dim, cfg):
        return TreeCrossAttention(
            embed_dim, cfg.decoder.attention_heads, dropout=cfg.attention_dropout,
            hier_embed_rows=self.hier_embed_rows, kdim=cfg.encoder.embed_dim,
            conventions=self.conventions, nodes_only=self.nodes_only,
        )

    def forward(self, x: Tensor, encoder_out: Optional[SourceTree] = None, *args, **kwargs):
        """fairseq's decoder layer. The encoder attention's weights over [leaves; nodes], when
        the layer returns them (``need_attn``, alignments), keep their leaf columns, the first
        N: so they index ``src_tokens``, as fairseq's decoder and sequence generator expect."""
        x, attn, self_attn_state = super().forward(x, encoder_out, *args, **kwargs)
        if attn is not None:
            attn = attn[..., :encoder_out.num_leaves]
        return x, attn, self_attn_state
