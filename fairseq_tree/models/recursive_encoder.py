"""Recursive tree encoders as fairseq encoders of the tree classifier: leaf states from the
embeddings or from a Transformer encoder over the leaves, composed bottom-up by a recursive
module (``RecursiveMultiBranchAttention``, ``RecursiveTreeAttention``), returned in the layout of
``TreeEncoder`` so that ``TreeClassifierModel`` reads leaves, nodes and roots alike.

The leaves' states are their inputs to the recursion (C_leaf = V_leaf, Recursive Tree Attention
Eq. 4; the word vectors in Ahmed et al.): per-leaf targets (SST's words) are classified from
them. In the dependency variant every word is a unit: the "nodes" are the N words, each with its
composed state (or its leaf state if it has no dependent), and the root is the root word.
"""

import logging
from dataclasses import dataclass, field, fields
from typing import Dict, List, Optional

import torch
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.models import FairseqEncoder
from fairseq.models.transformer import TransformerConfig, TransformerEncoderBase
from fairseq.modules import FairseqDropout
from torch import Tensor, nn

from fairseq_tree.data.binarize import InputError
from fairseq_tree.data.embeddings import load_text_embeddings
from fairseq_tree.data.label_dictionary import is_label_symbol
from fairseq_tree.errors import FairseqTreeError

logger = logging.getLogger(__name__)

LEAF_ENCODER_CHOICES = ChoiceEnum(["embeddings", "transformer"])


@dataclass
class RecursiveLeavesConfig(FairseqDataclass):
    """Options of the leaf states of every recursive tree encoder."""

    leaf_encoder: LEAF_ENCODER_CHOICES = field(
        default="embeddings",
        metadata={"help": "leaf states: the token embeddings (after --dropout), or a fairseq "
                  "Transformer encoder over the leaves (--encoder-layers, "
                  "--encoder-attention-heads, --encoder-ffn-embed-dim, positions)"},
    )
    embeddings: Optional[str] = field(
        default=None,
        metadata={"help": "initialise the token embeddings from this GloVe-format text file "
                  "(one word and its --encoder-embed-dim values per line); without it the "
                  "embeddings are trained from random"},
    )
    freeze_embeddings: bool = field(
        default=False,
        metadata={"help": "do not train the token embeddings (Ahmed et al. freeze GloVe)"},
    )


def fill_defaults(args, config_class):
    """Set every option of ``config_class`` that ``args`` lacks to its default."""
    for option in fields(config_class):
        if getattr(args, option.name, None) is None:
            setattr(args, option.name, option.default)


def load_leaf_embeddings(args, dictionary, embed_tokens: nn.Embedding, arch: str):
    """``--embeddings`` into the embedding table (a bad file stops the run with its line), and
    ``--freeze-embeddings``."""
    if args.embeddings:
        try:
            coverage = load_text_embeddings(args.embeddings, dictionary, embed_tokens)
        except InputError as err:
            raise FairseqTreeError(f"{arch}: error: --embeddings {err}") from None
        logger.info(str(coverage))
    if args.freeze_embeddings:
        embed_tokens.weight.requires_grad_(False)


def label_table(dictionary) -> Tensor:
    """(len(dictionary),) long: the compact index (1, 2, ...) of every label symbol ``[X]`` of
    the dictionary (node labels, POS tags), 0 for every other symbol (padding included); the
    label embeddings need rows for labels only, not for the whole vocabulary."""
    table = torch.zeros(len(dictionary), dtype=torch.long)
    labels = [index for index, symbol in enumerate(dictionary.symbols) if is_label_symbol(symbol)]
    table[labels] = torch.arange(1, len(labels) + 1)
    return table


class RecursiveTreeEncoder(FairseqEncoder):
    """Leaf states, then ``recursive`` bottom-up over each tree (see the module docstring).

    ``recursive`` is called as ``recursive(leaf_states B x N x C, leaf_padding B x N, spans,
    node_labels, leaf_labels, heads)`` and returns ``RecursiveOutput(nodes, root)``; labels are
    given as compact label indices (``label_table``), 0 where none.
    """

    def __init__(self, args, dictionary, embed_tokens: nn.Embedding, recursive: nn.Module):
        super().__init__(dictionary)
        self.recursive = recursive
        self.dependency = getattr(recursive, "dependency", False)
        self.padding_idx, self.eos_idx = dictionary.pad(), dictionary.eos()
        self.max_source_positions = args.max_source_positions
        self.register_buffer("label_ids", label_table(dictionary), persistent=False)
        if args.leaf_encoder == "transformer":
            cfg = TransformerConfig.from_namespace(args)
            self.leaf_transformer = TransformerEncoderBase(cfg, dictionary, embed_tokens)
            self.embed_tokens = None
        else:
            self.leaf_transformer = None
            self.embed_tokens = embed_tokens
            self.dropout_module = FairseqDropout(args.dropout, module_name=self.__class__.__name__)

    def leaf_states(self, src_tokens: Tensor, src_lengths: Optional[Tensor]) -> Tensor:
        """B x N leaf ids -> B x N x C leaf states."""
        if self.leaf_transformer is not None:
            encoded = self.leaf_transformer(src_tokens, src_lengths=src_lengths)
            return encoded["encoder_out"][0].transpose(0, 1)
        return self.dropout_module(self.embed_tokens(src_tokens))

    def labels(self, ids: Optional[Tensor]) -> Optional[Tensor]:
        return None if ids is None else self.label_ids[ids]

    def forward(self, src_tokens: Tensor, src_lengths: Optional[Tensor] = None,
                src_node_labels: Optional[Tensor] = None, src_node_spans: Optional[Tensor] = None,
                src_leaf_tags: Optional[Tensor] = None, src_heads: Optional[Tensor] = None,
                return_all_hiddens: bool = False) -> Dict[str, List[Tensor]]:
        """
        Args:
            src_tokens: B x N leaf ids (right-padded, EOS last); src_node_labels: B x M;
                src_node_spans: B x M x 2; src_leaf_tags: B x N POS-tag ids (pad where none);
                src_heads: B x N head columns (-1 at the root and padding).
        Returns:
            ``encoder_out`` (N x B x C leaf states), ``encoder_padding_mask`` (B x N, True at
            padding and EOS), ``encoder_nodes`` (M x B x C), ``encoder_node_padding_mask``
            (B x M) and ``root`` (B x C); in the dependency variant M = N (the words) and
            ``root_columns`` (B) gives each root word's column in [leaves; nodes].
        """
        leaf_padding = src_tokens.eq(self.padding_idx) | src_tokens.eq(self.eos_idx)
        leaves = self.leaf_states(src_tokens, src_lengths)
        heads = None if src_heads is None else src_heads.long()
        nodes, root = self.recursive(leaves, leaf_padding, src_node_spans,
                                     self.labels(src_node_labels), self.labels(src_leaf_tags),
                                     heads)
        output = {
            "encoder_out": [leaves.transpose(0, 1)],  # N x B x C
            "encoder_padding_mask": [leaf_padding],  # B x N
            "encoder_nodes": [nodes.transpose(0, 1)],  # M x B x C
            "encoder_node_padding_mask": [src_node_spans[..., 0] >= src_node_spans[..., 1]],
            "root": [root],  # B x C
            "encoder_states": [],
        }
        if self.dependency:  # the units are the words; the root is the word without a head
            output["encoder_node_padding_mask"] = [leaf_padding]  # B x N
            root_word = ((heads < 0) & ~leaf_padding).long().argmax(1)
            output["root_columns"] = [src_tokens.size(1) + root_word]  # B, in [leaves; nodes]
        return output

    def max_positions(self):
        return self.max_source_positions
