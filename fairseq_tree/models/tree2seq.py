"""The tree2seq model and its named architectures."""

from typing import Optional

from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import TransformerConfig
from fairseq.models.transformer.transformer_legacy import (
    TransformerModel,
    base_architecture,
    transformer_iwslt_de_en,
    transformer_vaswani_wmt_en_de_big,
)
from torch import Tensor

from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.models.syntactic_decoder import SyntacticTreeDecoder, check_syntactic_decoder
from fairseq_tree.models.tree2seq_config import Tree2SeqConfig
from fairseq_tree.models.tree_decoder import TreeDecoder
from fairseq_tree.models.tree_encoder import TreeEncoder


@register_model("tree2seq")
class Tree2SeqModel(TransformerModel):
    """Tree-to-sequence Transformer with hierarchical accumulation: Nguyen et al.,
    "Tree-structured Attention with Hierarchical Accumulation", ICLR 2020.

    fairseq's Transformer with ``TreeEncoder`` and ``TreeDecoder``; it reads the batches of the
    ``tree_translation`` task. All Transformer options apply, plus ``Tree2SeqConfig``.
    """

    reads_trees = True
    # The translation hub's loader (``fairseq_tree.hub.from_pretrained``): the hub sits above the
    # models, and the package sets it when it loads (``fairseq_tree/__init__.py``).
    hub_loader = None

    @classmethod
    def hub_models(cls):
        return {}  # no published tree2seq checkpoints (fairseq's Transformer lists its own)

    @classmethod
    def from_pretrained(cls, model_name_or_path, checkpoint_file="model.pt",
                        data_name_or_path=None, recipe=None, **kwargs):
        """Load a checkpoint of the ``tree_translation`` task for translating from Python.

        Returns a ``TreeHubInterface`` (fairseq's ``GeneratorHubInterface``), whose
        ``translate()`` takes raw sentences or bracketed trees, one string or a list.

        Args:
            model_name_or_path: the folder of the checkpoint(s).
            checkpoint_file: its file name (":"-separated names: an ensemble), as in fairseq.
            data_name_or_path: the data-bin folder (dictionaries); as in fairseq, a path
                starting with "." is inside the model folder (default "." or the recipe's).
            recipe: a data-prep recipe's output folder: its ``recipe.json`` gives the data-bin,
                languages, BPE codes, parser and text steps, as for
                ``fairseq-tree-translate --recipe``.
            kwargs: the text steps of ``TextSteps`` (``parser``, ``parser_options``,
                ``tokenize``, ``lowercase``, ``bpe_codes`` or ``sentencepiece_model``, ...; given
                ones win over the recipe's), ``detokenize``, and fairseq's overrides
                (``source_lang``, ``target_lang``, ``batch_size``, ``max_tokens``, ...).
        """
        return cls.hub_loader(model_name_or_path, checkpoint_file, data_name_or_path, recipe,
                              archive_map=cls.hub_models(), **kwargs)

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        gen_parser_from_dataclass(parser, Tree2SeqConfig(), delete_default=True)

    @classmethod
    def build_model(cls, args, task):
        tree2seq_base_architecture(args)
        if getattr(args, "no_cross_attention", False):
            raise FairseqTreeError("--no-cross-attention removes the decoder's tree attention")
        if any(getattr(args, name, False) for name in ("checkpoint_activations", "offload_activations")):
            # fairseq's checkpointing recomputes a layer from its tensor arguments; the tree
            # layers take the source tree (encoder states included) as one object.
            raise FairseqTreeError("--checkpoint-activations / --offload-activations are not supported "
                             "by tree2seq")
        if args.syntactic_decoder:
            check_syntactic_decoder(args, task)
        elif args.tree_depth_bias:
            raise FairseqTreeError("--tree-depth-bias biases the syntactic decoder's attention: "
                                   "use it with --syntactic-decoder")
        return super().build_model(args, task)

    @classmethod
    def build_encoder(cls, args, src_dict, embed_tokens):
        return TreeEncoder(TransformerConfig.from_namespace(args), src_dict, embed_tokens)

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        decoder = SyntacticTreeDecoder if args.syntactic_decoder else TreeDecoder
        return decoder(TransformerConfig.from_namespace(args), tgt_dict, embed_tokens)

    def forward(self, src_tokens: Tensor, src_lengths: Tensor, prev_output_tokens: Tensor,
                src_node_labels: Optional[Tensor] = None, src_node_spans: Optional[Tensor] = None,
                return_all_hiddens: bool = True, features_only: bool = False,
                alignment_layer: Optional[int] = None, alignment_heads: Optional[int] = None,
                src_embedding_paths: Optional[Tensor] = None):
        """fairseq's encoder-decoder forward, with the source tree passed to the encoder."""
        encoder_out = self.encoder(
            src_tokens, src_lengths=src_lengths, src_node_labels=src_node_labels,
            src_node_spans=src_node_spans, return_all_hiddens=return_all_hiddens,
            src_embedding_paths=src_embedding_paths,
        )
        return self.decoder(
            prev_output_tokens, encoder_out=encoder_out, features_only=features_only,
            alignment_layer=alignment_layer, alignment_heads=alignment_heads,
            src_lengths=src_lengths, return_all_hiddens=return_all_hiddens,
        )

    def set_beam_size(self, beam_size: int):
        """Called by fairseq's SequenceGenerator: the decoder's tree cross-attention keeps its
        source memory once per sentence, not once per beam copy."""
        self.decoder.set_beam_size(beam_size)


def tree2seq_defaults(args):
    """Defaults of the tree options (the paper's: |E| = 100, both mechanisms on)."""
    for option in Tree2SeqConfig.__dataclass_fields__.values():
        if not hasattr(args, option.name) or getattr(args, option.name) is None:
            setattr(args, option.name, option.default)


@register_model_architecture("tree2seq", "tree2seq")
def tree2seq_base_architecture(args):
    """Transformer base (d 512, FFN 2048, 8 heads, 6+6 layers) with tree attention."""
    tree2seq_defaults(args)
    base_architecture(args)


@register_model_architecture("tree2seq", "tree2seq_syntactic_decoder")
def tree2seq_syntactic_decoder(args):
    """tree2seq (Transformer base) whose decoder follows the tree it writes (--target-trees):
    ``--syntactic-decoder``."""
    args.syntactic_decoder = True
    tree2seq_base_architecture(args)


@register_model_architecture("tree2seq", "tree2seq_wmt_en_de")
def tree2seq_wmt_en_de(args):
    """WMT'14 En-De base (Section 5.1): as ``transformer_wmt_en_de``."""
    tree2seq_base_architecture(args)


@register_model_architecture("tree2seq", "tree2seq_iwslt_de_en")
def tree2seq_iwslt_de_en(args):
    """IWSLT (Section 5.1): d 512, FFN 1024, 4 heads, 6+6 layers, as ``transformer_iwslt_de_en``."""
    tree2seq_defaults(args)
    transformer_iwslt_de_en(args)


@register_model_architecture("tree2seq", "tree2seq_vaswani_wmt_en_de_big")
def tree2seq_vaswani_wmt_en_de_big(args):
    """WMT'14 En-De big: d 1024, FFN 4096, 16 heads, dropout 0.3."""
    tree2seq_defaults(args)
    transformer_vaswani_wmt_en_de_big(args)


@register_model_architecture("tree2seq", "tree2seq_tiny")
def tree2seq_tiny(args):
    """A tiny model for tests and CPU examples: d 64, FFN 128, 4 heads, 2+2 layers."""
    for name, value in (("encoder_embed_dim", 64), ("encoder_ffn_embed_dim", 128),
                        ("encoder_attention_heads", 4), ("encoder_layers", 2),
                        ("decoder_attention_heads", 4), ("decoder_layers", 2)):
        setattr(args, name, getattr(args, name, value))
    tree2seq_base_architecture(args)
