"""The tree classifier: the tree encoder of tree2seq with a classification head on the root.

Nguyen et al., "Tree-structured Attention with Hierarchical Accumulation", ICLR 2020, Section 5.2
(text classification): the encoder of Section 4.3 reads the tree, and the root node's final state
is classified (a document's ``DOC`` root is the paper's "dummy root"). For the Stanford Sentiment
Treebank every leaf and node is classified too ("we optimize every sentiment label").
"""

from typing import Dict, List, Optional

import torch
from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.models import BaseFairseqModel, register_model, register_model_architecture
from fairseq.models.roberta.model import RobertaClassificationHead
from fairseq.models.transformer import TransformerConfig
from fairseq.models.transformer.transformer_legacy import base_architecture
from fairseq.models.transformer.transformer_base import TransformerModelBase
from torch import Tensor, nn

from fairseq_tree.models.tree2seq import tree2seq_defaults
from fairseq_tree.models.tree2seq_config import TreeAttentionConfig
from fairseq_tree.models.sentence_pair_head import SentencePairClassificationHead
from fairseq_tree.models.tree_encoder import TreeEncoder
from fairseq_tree.modules.right_frontier import RightFrontierAttention, right_frontier_mask

ROOT_QUERIED = "root-and-root-queried-right-frontier"
HEAD_READS = ["root", "right-frontier", "root-and-right-frontier", ROOT_QUERIED]


def rows_at(units: Tensor, columns: Tensor) -> Tensor:
    """B x T x C, B columns -> B x C: each example's row at its column."""
    return units[torch.arange(units.size(0), device=units.device), columns]


def root_columns(node_padding_mask: Tensor, num_leaf_columns: int) -> Tensor:
    """Column of each example's root in [leaves; nodes] (B,): its first node (pre-order), or its
    first leaf for a one-leaf tree, which has no node (leaves are right-padded here)."""
    if node_padding_mask.size(1) == 0:
        return node_padding_mask.new_zeros(node_padding_mask.size(0), dtype=torch.long)
    has_root = ~node_padding_mask[:, 0]
    return has_root.long() * num_leaf_columns


@register_model("tree_classifier")
class TreeClassifierModel(BaseFairseqModel):
    """A tree encoder and named classification heads (as fairseq's RoBERTa keeps them), for the
    ``tree_classification`` task.

    The head is fairseq's ``RobertaClassificationHead`` (dense, activation, dropout, projection),
    the head of the ``roberta`` baseline, here applied to the root state instead of the first
    token (``--head-reads right-frontier``: an attention over the tree's right frontier, for
    prefixes whose next word attaches there; ``root-and-right-frontier``: their sum;
    ``root-and-root-queried-right-frontier``: the sum, the attention queried by the root); with
    ``every_unit`` it classifies every leaf and node. Sentence pairs (``input1``) meet in Tai et
    al.'s ``SentencePairClassificationHead``. Other tree encoders override
    ``build_encoder`` (and ``leaf_annotations`` for the per-leaf data they read); an encoder
    whose roots are not node 0 returns their columns as ``root_columns``.
    """

    reads_trees = True

    def __init__(self, args, encoder):
        super().__init__()
        self.args = args
        self.encoder = encoder
        self.classification_heads = nn.ModuleDict()
        self.frontier_attention = None
        reads = getattr(args, "head_reads", "root")
        if reads != "root":
            if getattr(encoder, "dependency", False):
                raise ValueError(f"--head-reads {reads} reads constituency trees' node "
                                 "spans; this encoder reads dependency heads")
            self.frontier_attention = RightFrontierAttention(
                args.encoder_embed_dim, args.encoder_embed_dim,
                query_dim=args.encoder_embed_dim if reads == ROOT_QUERIED else None)

    @classmethod
    def add_args(cls, parser):
        gen_parser_from_dataclass(parser, TransformerConfig(), delete_default=True, with_prefix="")
        gen_parser_from_dataclass(parser, TreeAttentionConfig(), delete_default=True)
        parser.add_argument("--pooler-dropout", type=float, metavar="D",
                            help="dropout in the classification head")
        parser.add_argument("--pooler-activation-fn", metavar="FN",
                            help="activation of the classification head's hidden layer")
        parser.add_argument("--pair-hidden-dim", type=int, metavar="N",
                            help="hidden units of the sentence-pair head (Tai et al. 2015: 50)")
        parser.add_argument("--head-reads",
                            choices=HEAD_READS,
                            help="the state a tree's classification head reads: its root's, "
                                 "an attention over its right frontier (the nodes that end at "
                                 "its last word, and that word), where a prefix's next word "
                                 "attaches, the sum of the two, or the sum with the attention "
                                 "queried by the root's state")

    @classmethod
    def build_model(cls, args, task):
        tree_classifier_architecture(args)
        dictionary = task.source_dictionary
        embed_tokens = TransformerModelBase.build_embedding(
            TransformerConfig.from_namespace(args), dictionary, args.encoder_embed_dim,
            args.encoder_embed_path,
        )
        return cls(args, cls.build_encoder(args, dictionary, embed_tokens))

    @classmethod
    def build_encoder(cls, args, dictionary, embed_tokens):
        """The tree encoder (the hook a classifier with another tree encoder overrides)."""
        return TreeEncoder(TransformerConfig.from_namespace(args), dictionary, embed_tokens)

    def register_classification_head(self, name, num_classes=None, inner_dim=None,
                                     sentence_pair=False, **kwargs):
        """fairseq's RoBERTa head on one tree's state, or with ``sentence_pair`` Tai et al.'s
        head on two (``SentencePairClassificationHead``)."""
        if sentence_pair:
            self.classification_heads[name] = SentencePairClassificationHead(
                self.args.encoder_embed_dim, inner_dim or self.args.pair_hidden_dim,
                num_classes, self.args.pooler_dropout,
            )
            return
        self.classification_heads[name] = RobertaClassificationHead(
            input_dim=self.args.encoder_embed_dim,
            inner_dim=inner_dim or self.args.encoder_embed_dim,
            num_classes=num_classes,
            activation_fn=self.args.pooler_activation_fn,
            pooler_dropout=self.args.pooler_dropout,
        )

    def leaf_annotations(self) -> Dict[str, bool]:
        """The per-leaf datasets beyond the tree that the encoder reads (``tags``: POS tags,
        ``heads``: dependency heads), each marked required or optional; the task loads them
        (the hook a classifier with another tree encoder overrides)."""
        return {}

    def forward(self, src_tokens: Tensor, src_lengths: Optional[Tensor] = None,
                src_node_labels: Optional[Tensor] = None, src_node_spans: Optional[Tensor] = None,
                features_only: bool = False, return_all_hiddens: bool = False,
                classification_head_name: Optional[str] = None, every_unit: bool = False,
                src_leaf_tags: Optional[Tensor] = None, src_heads: Optional[Tensor] = None,
                input1: Optional[Dict[str, Tensor]] = None, **kwargs):
        """
        Args:
            src_tokens: B x N leaf ids (right-padded, EOS last); src_node_labels: B x M;
                src_node_spans: B x M x 2 (as ``TreeLanguagePairDataset`` collates them);
                src_leaf_tags, src_heads: B x N, for the encoders that read them.
            every_unit: classify every leaf and node, not only the root.
            input1: the second trees of sentence pairs (the same keys); the two roots go to a
                sentence-pair head.
        Returns:
            the root's logits (B x classes) or states (B x C) without a head (B x 2 x C for
            pairs), or with ``every_unit`` B x (N+M) x classes over [leaves; nodes]; and a dict
            with ``root_columns`` (B,) and ``inner_states``.
        """
        units, roots, inner_states = self.encode_units(
            src_tokens, src_lengths, src_node_labels, src_node_spans, return_all_hiddens,
            src_leaf_tags=src_leaf_tags, src_heads=src_heads,
        )
        if input1 is not None:
            if every_unit:
                raise ValueError("every_unit classifies the units of one tree, not of a pair")
            right_units, right_roots, _ = self.encode_units(**input1)
            features = torch.stack([
                self.tree_features(units, roots, src_tokens, src_node_spans),
                self.tree_features(right_units, right_roots, input1["src_tokens"],
                                   input1.get("src_node_spans")),
            ], 1)
        else:
            features = (units if every_unit
                        else self.tree_features(units, roots, src_tokens, src_node_spans))
        if classification_head_name is not None:
            head = self.classification_heads[classification_head_name]
            if input1 is not None:
                features = head(features)
            else:
                rows = features.reshape(-1, 1, features.size(-1))  # the head reads position 0
                features = head(rows).view(*features.shape[:-1], -1)
        return features, {"root_columns": roots, "inner_states": inner_states}

    def encode_units(self, src_tokens: Tensor, src_lengths: Optional[Tensor] = None,
                     src_node_labels: Optional[Tensor] = None,
                     src_node_spans: Optional[Tensor] = None, return_all_hiddens: bool = False,
                     **annotations):
        """One batch of trees -> unit states B x (N+M) x C over [leaves; nodes], the root
        column of each tree (B,) and the encoder's inner states. ``annotations`` (B x N
        ``src_leaf_tags``, ``src_heads``) reach the encoder when given."""
        given = {name: value for name, value in annotations.items() if value is not None}
        encoder_out = self.encoder(
            src_tokens, src_lengths=src_lengths, src_node_labels=src_node_labels,
            src_node_spans=src_node_spans, return_all_hiddens=return_all_hiddens, **given,
        )
        if "root_columns" in encoder_out:  # an encoder whose roots are not node 0
            roots = encoder_out["root_columns"][0]
        else:
            roots = root_columns(encoder_out["encoder_node_padding_mask"][0], src_tokens.size(1))
        return self.unit_states(encoder_out), roots, encoder_out.get("encoder_states", [])

    def tree_features(self, units: Tensor, roots: Tensor, src_tokens: Tensor,
                      src_node_spans: Optional[Tensor]) -> Tensor:
        """B x C, the state a tree's head reads from its units' B x (N+M) x C: its root's row,
        or with ``--head-reads right-frontier`` the attention over its right frontier (with
        ``root-and-right-frontier`` the two added; with ``root-and-root-queried-right-frontier``
        the attention's query is the root's state)."""
        root = rows_at(units, roots)
        if self.frontier_attention is None:
            return root
        if src_node_spans is None:
            src_node_spans = src_tokens.new_zeros(src_tokens.size(0), 0, 2)
        mask = right_frontier_mask(src_tokens, src_node_spans, roots,
                                   self.encoder.dictionary.pad(), self.encoder.dictionary.eos())
        reads = self.args.head_reads
        frontier = self.frontier_attention(units, mask, root if reads == ROOT_QUERIED else None)
        return frontier if reads == "right-frontier" else root + frontier

    @staticmethod
    def unit_states(encoder_out: Dict[str, List[Tensor]]) -> Tensor:
        """B x (N+M) x C: the encoder's final leaf states, then its node states."""
        leaves, nodes = encoder_out["encoder_out"][0], encoder_out["encoder_nodes"][0]
        return torch.cat([leaves, nodes], dim=0).transpose(0, 1)

    def max_positions(self):
        return self.encoder.max_positions()

    def upgrade_state_dict_named(self, state_dict, name):
        """Keep the heads a checkpoint holds when the task registers none of that name
        (as RoBERTa does), so a checkpoint loads whatever heads it was trained with."""
        prefix = name + "." if name else ""
        super().upgrade_state_dict_named(state_dict, name)
        for key in state_dict:
            if key.startswith(prefix + "classification_heads.") and key.endswith("out_proj.weight"):
                head = key[len(prefix + "classification_heads."):].split(".")[0]
                if head not in self.classification_heads:
                    num_classes, inner_dim = state_dict[key].shape
                    pair = f"{prefix}classification_heads.{head}.hidden.weight" in state_dict
                    self.register_classification_head(head, num_classes, inner_dim,
                                                      sentence_pair=pair)


@register_model_architecture("tree_classifier", "tree_classifier")
def tree_classifier_architecture(args):
    """Transformer-base sizes (d 512, FFN 2048, 8 heads, 6 layers) with tree attention."""
    tree2seq_defaults(args)
    args.pooler_dropout = getattr(args, "pooler_dropout", 0.0)
    args.pooler_activation_fn = getattr(args, "pooler_activation_fn", "tanh")
    args.pair_hidden_dim = getattr(args, "pair_hidden_dim", 50)
    args.head_reads = getattr(args, "head_reads", "root")
    base_architecture(args)


@register_model_architecture("tree_classifier", "tree_classifier_tiny")
def tree_classifier_tiny(args):
    """The paper's classification size (Section 5.2): 2 layers, d 64, 4 heads, FFN 128 (the
    authors' code; the paper leaves it open), |E| 100."""
    for name, value in (("encoder_embed_dim", 64), ("encoder_ffn_embed_dim", 128),
                        ("encoder_attention_heads", 4), ("encoder_layers", 2)):
        setattr(args, name, getattr(args, name, value))
    tree_classifier_architecture(args)
