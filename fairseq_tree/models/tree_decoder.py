"""The tree decoder: a Transformer decoder whose encoder attention reads the source tree."""

from typing import Dict, List, Optional

from fairseq.models.transformer import TransformerDecoderBase
from torch import Tensor

from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.models.tree2seq_config import Tree2SeqConfig
from fairseq_tree.models.tree_encoder import wrap_layer
from fairseq_tree.modules.source_tree import SourceTree
from fairseq_tree.modules.tree_attention import shared_source_memories
from fairseq_tree.modules.tree_transformer_layer import TreeDecoderLayer


class TreeDecoder(TransformerDecoderBase):
    """Decoder of Nguyen et al. (ICLR 2020), Section 4.4: fairseq's Transformer decoder with tree
    cross-attention (Eqs. 21-24) over the [nodes; leaves] of ``TreeEncoder``'s output."""

    layer_class = TreeDecoderLayer

    def __init__(self, cfg, dictionary, embed_tokens, output_projection=None):
        if cfg.cross_self_attention:
            raise FairseqTreeError("--cross-self-attention is not supported by tree2seq")
        self.tree_cfg = Tree2SeqConfig.from_args(cfg)  # read by build_decoder_layer
        super().__init__(cfg, dictionary, embed_tokens, output_projection=output_projection)

    def build_decoder_layer(self, cfg, no_encoder_attn=False):
        layer = self.layer_class(cfg, self.tree_cfg.embedding_rows, no_encoder_attn=no_encoder_attn,
                                 conventions=self.tree_cfg.conventions,
                                 nodes_only=self.tree_cfg.cross_attention_nodes_only)
        return wrap_layer(layer, cfg)

    def extract_features(self, prev_output_tokens: Tensor,
                         encoder_out: Optional[Dict[str, List[Tensor]]],
                         incremental_state=None, full_context_alignment: bool = False,
                         alignment_layer: Optional[int] = None,
                         alignment_heads: Optional[int] = None):
        """fairseq's decoder loop, attending to the source tree.

        That loop hands ``encoder_out["encoder_out"][0]`` to every layer's encoder attention as
        its key and value; here it is the ``SourceTree`` of the batch (encoder leaf and node
        states, spans, padding), so the tree-only work is done once for all layers.
        """
        if encoder_out is None or "encoder_nodes" not in encoder_out:
            raise ValueError("the tree2seq decoder needs the output of the tree encoder")
        paths = encoder_out.get("src_embedding_paths", [])
        mapping = encoder_out.get("src_tree_rows", []) or [None, None]
        tree = SourceTree.from_batch(
            encoder_out["encoder_padding_mask"][0], encoder_out["src_node_spans"][0],
            paths[0] if paths else None, *mapping,
            leaves=encoder_out["encoder_out"][0], nodes=encoder_out["encoder_nodes"][0],
        )
        attentions = [layer.encoder_attn for layer in self.layers]
        if attentions and not attentions[0].has_source_memory(incremental_state):
            tree.cross_memories = shared_source_memories(attentions, tree,
                                                         incremental_state is not None)
        return self.extract_features_scriptable(
            prev_output_tokens, {"encoder_out": [tree], "encoder_padding_mask": []},
            incremental_state, full_context_alignment, alignment_layer, alignment_heads,
        )
