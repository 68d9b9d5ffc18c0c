"""The recursive tree encoders of the other papers as encoders of ``tree_classification``: each a
``TreeClassifierModel`` whose ``build_encoder`` hook builds a ``RecursiveTreeEncoder``.

* ``recursive_multibranch_classifier``: Ahmed et al. (2019), "You Only Need Attention to
  Traverse Trees" (CTT; DTT with ``--dependency``), ``fairseq_tree.modules.multi_branch_attention``.
* ``recursive_tree_attention_classifier``: "Recursive Tree Attention" (Eq. 5),
  ``fairseq_tree.modules.recursive_tree_attention``; the paper's BERT + CBHG under it is replaced
  by a small Transformer encoder over the leaves (``--leaf-encoder transformer``) or the
  embeddings.

The heads are the tree classifier's: fairseq's RoBERTa head on the root (every leaf and node
with ``node_classification``), Tai et al.'s pair head on two roots.
"""

from dataclasses import dataclass, field

from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.models import register_model, register_model_architecture

from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.models.recursive_encoder import (
    RecursiveLeavesConfig,
    RecursiveTreeEncoder,
    fill_defaults,
    label_table,
    load_leaf_embeddings,
)
from fairseq_tree.models.tree_classifier import TreeClassifierModel, tree_classifier_architecture
from fairseq_tree.modules.multi_branch_attention import ATTENTIONS, RecursiveMultiBranchAttention
from fairseq_tree.modules.recursive_tree_attention import RecursiveTreeAttention


ATTENTION_CHOICES = ChoiceEnum(list(ATTENTIONS))


def set_sizes(args, **sizes):
    """Architecture defaults: each option the command line left unset."""
    for name, value in sizes.items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)


@dataclass
class MultiBranchConfig(FairseqDataclass):
    """Ahmed et al. 2019: the composition's options and the ablations of Tables 2-3."""

    dependency: bool = field(
        default=False,
        metadata={"help": "DTT: compose each word from itself and its dependents (reads "
                  "{split}.heads, fairseq-tree-preprocess --dependency-heads); default CTT, "
                  "each constituent from its children"},
    )
    composition_attention: ATTENTION_CHOICES = field(
        default="multi-branch",
        metadata={"help": "the attention of the composition (Table 3 ablations: single-head, "
                  "multi-head with --branches heads)"},
    )
    branches: int = field(default=6, metadata={"help": "attention branches n (Eq. 7)"})
    branch_ffn_dim: int = field(
        default=341, metadata={"help": "hidden kernels of each branch's convolution (Eq. 6)"}
    )
    positional_encoding: bool = field(
        default=False,
        metadata={"help": "add the sinusoidal encoding of each child's rank to its vector "
                  "(Table 2's PE on; off in the paper's best CTT)"},
    )


@register_model("recursive_multibranch_classifier")
class RecursiveMultiBranchClassifier(TreeClassifierModel):
    """Ahmed et al. 2019's Tree Transformer: one multi-branch composition, shared by all nodes,
    applied from the leaves up; the root vector is classified."""

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        gen_parser_from_dataclass(parser, RecursiveLeavesConfig(), delete_default=True)
        gen_parser_from_dataclass(parser, MultiBranchConfig(), delete_default=True)

    @classmethod
    def build_encoder(cls, args, dictionary, embed_tokens):
        load_leaf_embeddings(args, dictionary, embed_tokens, "recursive_multibranch_classifier")
        recursive = RecursiveMultiBranchAttention(
            args.encoder_embed_dim, dependency=args.dependency,
            attention=args.composition_attention, branches=args.branches,
            ffn_dim=args.branch_ffn_dim, dropout=args.dropout,
            positional_encoding=args.positional_encoding,
        )
        return RecursiveTreeEncoder(args, dictionary, embed_tokens, recursive)

    @classmethod
    def build_model(cls, args, task):
        if args.dependency and getattr(task.cfg, "node_targets", False):
            raise FairseqTreeError("recursive_multibranch_classifier: error: --dependency (DTT) has "
                             "no constituents to classify: --node-targets needs CTT")
        return super().build_model(args, task)

    def leaf_annotations(self):
        return {"heads": True} if self.args.dependency else {}


@register_model_architecture("recursive_multibranch_classifier",
                             "recursive_multibranch_classifier")
def recursive_multibranch_architecture(args):
    """The paper's sizes: 300-d word vectors (GloVe with --embeddings), 6 branches of 50, convs
    of 341 then 300 kernels, dropout 0.1; leaf states are the embeddings."""
    set_sizes(args, encoder_embed_dim=300, dropout=0.1, encoder_attention_heads=6,
              encoder_layers=2, encoder_ffn_embed_dim=600)
    fill_defaults(args, RecursiveLeavesConfig)
    fill_defaults(args, MultiBranchConfig)
    tree_classifier_architecture(args)


@register_model_architecture("recursive_multibranch_classifier",
                             "recursive_multibranch_classifier_tiny")
def recursive_multibranch_tiny(args):
    """CPU size: 60-d vectors, 6 branches of 10, convs of 68 then 60 kernels (the paper's
    ratios)."""
    set_sizes(args, encoder_embed_dim=60, branch_ffn_dim=68, encoder_ffn_embed_dim=120)
    recursive_multibranch_architecture(args)


@dataclass
class TreeAttentionClassifierConfig(FairseqDataclass):
    """Recursive Tree Attention: sizes and the ablations of its Table 1."""

    label_dim: int = field(default=64, metadata={"help": "constituent-label embedding size"})
    tree_attention_dim: int = field(
        default=128, metadata={"help": "hidden size of the additive attention A_plain"}
    )
    plain_attention: bool = field(
        default=False,
        metadata={"help": "ablation: every node attends the leaves of its span directly "
                  "(non-structured attention)"},
    )
    no_node_positions: bool = field(
        default=False, metadata={"help": "ablation: no positional encoding of the children"}
    )
    no_label_embeddings: bool = field(
        default=False, metadata={"help": "ablation: no constituent-label embeddings"}
    )
    no_subword_nodes: bool = field(
        default=False,
        metadata={"help": "ablation: a word split into pieces enters its parent as the mean of "
                  "the pieces (needs the leaves' POS tags: --leaf-tags)"},
    )


@register_model("recursive_tree_attention_classifier")
class RecursiveTreeAttentionClassifier(TreeClassifierModel):
    """Recursive Tree Attention: each node summarises its children by additive attention with
    node positions and label embeddings; the root is classified."""

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        gen_parser_from_dataclass(parser, RecursiveLeavesConfig(), delete_default=True)
        gen_parser_from_dataclass(parser, TreeAttentionClassifierConfig(), delete_default=True)

    @classmethod
    def build_encoder(cls, args, dictionary, embed_tokens):
        load_leaf_embeddings(args, dictionary, embed_tokens, "recursive_tree_attention_classifier")
        recursive = RecursiveTreeAttention(
            args.encoder_embed_dim, int(label_table(dictionary).max()) + 1, 0, args.label_dim,
            args.tree_attention_dim, structured=not args.plain_attention,
            positions=not args.no_node_positions, labels=not args.no_label_embeddings,
            subword_nodes=not args.no_subword_nodes,
        )
        return RecursiveTreeEncoder(args, dictionary, embed_tokens, recursive)

    def leaf_annotations(self):
        """POS tags label the leaves (optional: without them every leaf is an X_SW piece);
        the no-sub-word-nodes ablation needs them to tell pieces from words."""
        if self.args.no_subword_nodes:
            return {"tags": True}
        return {} if self.args.no_label_embeddings else {"tags": False}


@register_model_architecture("recursive_tree_attention_classifier",
                             "recursive_tree_attention_classifier")
def recursive_tree_attention_architecture(args):
    """The paper's tree attention (64-d labels, 128-d attention) over 256-d leaf states (its
    CBHG's width) from a 2-layer Transformer over the leaves (4 heads, FFN 1024)."""
    set_sizes(args, encoder_embed_dim=256, encoder_layers=2, encoder_attention_heads=4,
              encoder_ffn_embed_dim=1024, dropout=0.1, leaf_encoder="transformer")
    fill_defaults(args, RecursiveLeavesConfig)
    fill_defaults(args, TreeAttentionClassifierConfig)
    tree_classifier_architecture(args)


@register_model_architecture("recursive_tree_attention_classifier",
                             "recursive_tree_attention_classifier_tiny")
def recursive_tree_attention_tiny(args):
    """CPU size, as tree_classifier_tiny: d 64, a 2-layer leaf Transformer (4 heads, FFN 128),
    16-d labels, 32-d attention."""
    set_sizes(args, encoder_embed_dim=64, encoder_ffn_embed_dim=128, label_dim=16,
              tree_attention_dim=32)
    recursive_tree_attention_architecture(args)
