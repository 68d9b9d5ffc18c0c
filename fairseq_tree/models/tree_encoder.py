"""The tree encoder: a Transformer encoder over the leaves and nodes of the source tree."""

from typing import Dict, List, Optional

import torch
import torch.nn.functional as F
from fairseq.distributed import fsdp_wrap
from fairseq.models.transformer import TransformerEncoderBase
from torch import Tensor

from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.models.tree2seq_config import TreeAttentionConfig
from fairseq_tree.modules.source_tree import SourceTree, representatives
from fairseq_tree.modules.tree_transformer_layer import TreeEncoderLayer


def compute_dtype(x: Tensor) -> torch.dtype:
    """The dtype the layers compute in: autocast's where it is on (--amp), else x's."""
    if torch.is_autocast_enabled(x.device.type):
        return torch.get_autocast_dtype(x.device.type)
    return x.dtype


def wrap_layer(layer, cfg):
    """FSDP wrapping, as fairseq wraps its own layers (activation checkpointing is refused by
    ``Tree2SeqModel.build_model``)."""
    return fsdp_wrap(layer, min_num_params=cfg.min_params_to_wrap)


class TreeEncoder(TransformerEncoderBase):
    """Tree encoder of Nguyen et al. (ICLR 2020), Section 4.3.

    Leaves are token embeddings plus positional embeddings; nodes are embeddings of their labels
    (looked up in the same table: labels are ``[NP]``-style symbols of the source dictionary),
    without positions. Every layer runs tree self-attention over [leaves; nodes].
    """

    def __init__(self, cfg, dictionary, embed_tokens):
        self.tree_cfg = TreeAttentionConfig.from_args(cfg)  # read by build_encoder_layer
        super().__init__(cfg, dictionary, embed_tokens)

    def build_encoder_layer(self, cfg):
        layer = TreeEncoderLayer(
            cfg, self.tree_cfg.embedding_rows, subtree_masking=not self.tree_cfg.no_subtree_mask,
            conventions=self.tree_cfg.conventions,
        )
        return wrap_layer(layer, cfg)

    def embed_units(self, src_tokens: Tensor, node_labels: Tensor,
                    token_embeddings: Optional[Tensor] = None):
        """fairseq's ``forward_embedding`` of the leaves and the nodes together: B x N leaf ids
        and B x M label ids -> B x (N+M) x C inputs, scaled embeddings looked up at once, the
        leaves' positions added (nodes have none), then fairseq's embedding LayerNorm, dropout
        and quant-noise over all; and the leaves' scaled embeddings (``encoder_embedding``).
        ``token_embeddings`` (B x N x C), when given, stand for the leaves' lookup."""
        if token_embeddings is None:
            looked_up = self.embed_tokens(torch.cat([src_tokens, node_labels], dim=1))
        else:
            looked_up = torch.cat([token_embeddings, self.embed_tokens(node_labels)], dim=1)
        x = embed = self.embed_scale * looked_up
        if self.embed_positions is not None:
            x = embed + F.pad(self.embed_positions(src_tokens), (0, 0, 0, node_labels.size(1)))
        if self.layernorm_embedding is not None:
            x = self.layernorm_embedding(x)
        x = self.dropout_module(x)
        if self.quant_noise is not None:
            x = self.quant_noise(x)
        return x, embed[:, :src_tokens.size(1)]

    def forward(self, src_tokens: Tensor, src_lengths: Optional[Tensor] = None,
                src_node_labels: Optional[Tensor] = None, src_node_spans: Optional[Tensor] = None,
                return_all_hiddens: bool = False, token_embeddings: Optional[Tensor] = None,
                src_embedding_paths: Optional[Tensor] = None):
        """
        Args:
            src_tokens: B x N leaf ids (EOS last, padded); src_node_labels: B x M label ids;
            src_node_spans: B x M x 2 ``[start, end)`` column indices into ``src_tokens``
                (padded nodes ``[0, 0)``), as ``TreeLanguagePairDataset`` collates them;
            src_embedding_paths: P x 6, the paths of the hierarchical embeddings
                (``data.tree_paths.embedding_paths`` of the spans), as the collater gives them;
                without them the plan finds them, which waits for the device on a GPU.
        Returns:
            fairseq's encoder output dict, whose ``encoder_out`` holds the leaves, plus
            ``encoder_nodes`` (M x B x C), ``encoder_node_padding_mask`` (B x M) and
            ``src_node_spans`` (B x M x 2).
        """
        if src_node_labels is None or src_node_spans is None:
            raise FairseqTreeError(
                "the tree encoder (tree2seq, tree_classifier) reads trees but the batch has no "
                "src_node_labels / src_node_spans: give it trees (--task tree_translation or "
                "tree_classification with --tree-input tree); for the leaves alone, train a "
                "sequence model with --tree-input leaves-only (fairseq's transformer or roberta)"
            )
        leaf_padding = src_tokens.eq(self.padding_idx)
        tree = SourceTree.from_batch(leaf_padding, src_node_spans, src_embedding_paths)
        x, leaf_embedding = self.embed_units(src_tokens, src_node_labels, token_embeddings)
        padding = torch.cat([leaf_padding, tree.node_padding_mask], dim=1)
        x = x.masked_fill(padding.unsqueeze(-1), 0.0).transpose(0, 1).contiguous()  # (N+M) x B x C
        if self.layers:
            self.layers[0].self_attn.prepare(tree, compute_dtype(x))

        n = tree.num_leaves
        leaf_states: List[Tensor] = [x[:n]] if return_all_hiddens else []
        for layer in self.layers:
            x = layer(x, tree)
            if return_all_hiddens:
                leaf_states.append(x[:n])
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        return {
            "encoder_out": [x[:n]],  # N x B x C
            "encoder_padding_mask": [leaf_padding],  # B x N
            "encoder_embedding": [leaf_embedding],  # B x N x C
            "encoder_states": leaf_states,  # List[N x B x C]
            "fc_results": [],
            "src_tokens": [],
            "src_lengths": [(~leaf_padding).sum(dim=1, dtype=torch.int32).reshape(-1, 1)],
            "encoder_nodes": [x[n:]],  # M x B x C
            "encoder_node_padding_mask": [tree.node_padding_mask],  # B x M
            "src_node_spans": [src_node_spans],  # B x M x 2
            "src_embedding_paths": [] if src_embedding_paths is None else [src_embedding_paths],
            "src_tree_rows": [],  # once reordered: the batch row of each row, and a row of each
        }

    def reorder_encoder_out(self, encoder_out: Dict[str, List[Tensor]], new_order: Tensor):
        """fairseq's reordering of the leaf outputs, plus the nodes and spans. The paths of the
        hierarchical embeddings stay those of the batch as collated (a flat list, which rows
        repeated or dropped would have to be copied or cut for, reading their counts off the
        device); ``src_tree_rows`` says which collated row each row now is, and which row
        represents each collated row (``SourceTree``)."""
        reordered = super().reorder_encoder_out(encoder_out, new_order)
        reordered["encoder_nodes"] = [encoder_out["encoder_nodes"][0].index_select(1, new_order)]
        for key in ("encoder_node_padding_mask", "src_node_spans"):
            reordered[key] = [encoder_out[key][0].index_select(0, new_order)]
        reordered["src_embedding_paths"] = encoder_out.get("src_embedding_paths", [])
        mapping = encoder_out.get("src_tree_rows", [])
        if mapping:
            batch_rows, collated = mapping[0].index_select(0, new_order), mapping[1].size(0)
        else:
            batch_rows, collated = new_order, encoder_out["src_node_spans"][0].size(0)
        reordered["src_tree_rows"] = [batch_rows, representatives(batch_rows, collated)]
        return reordered
