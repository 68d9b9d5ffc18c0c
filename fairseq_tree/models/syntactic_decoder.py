"""The syntactic decoder: a decoder that writes a linearized target tree (``tree_translation
--target-trees``) and whose self-attention over what it has written follows the partial tree that
prefix encodes, Transformer Grammars' STACK and COMPOSE masks (Sartran et al., TACL 2022;
``fairseq_tree.modules.written_tree``), behind fairseq's Transformer encoder
(``transformer_syntactic_decoder``, string-to-tree) or tree2seq's (``tree2seq_syntactic_decoder``,
tree-to-tree)."""

from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import TransformerConfig, TransformerDecoderBase
from fairseq.models.transformer.transformer_legacy import TransformerModel, base_architecture

from fairseq_tree.data.linearized_tree import CLOSE_SYMBOL, OPEN_SYMBOL
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.models.syntactic_decoder_config import SyntacticDecoderConfig
from fairseq_tree.models.tree_decoder import TreeDecoder
from fairseq_tree.models.tree_encoder import wrap_layer
from fairseq_tree.modules.written_tree import WrittenTreeState
from fairseq_tree.modules.written_tree_attention import (
    SyntacticDecoderLayer,
    SyntacticTreeDecoderLayer,
    written_tree_masks,
)


def check_syntactic_decoder(args, task):
    """Refuse a syntactic decoder for a task whose decoder does not write trees, and activation
    checkpointing (its recomputation would run without the masks of the pass)."""
    if getattr(task, "output_tree", None) is None:
        raise FairseqTreeError(f"--arch {args.arch} reads the tree its decoder writes: train it "
                               "with --task tree_translation --target-trees")
    if any(getattr(args, name, False) for name in ("checkpoint_activations",
                                                   "offload_activations")):
        raise FairseqTreeError("--checkpoint-activations / --offload-activations are not "
                               "supported by the syntactic decoder")
    if args.tree_depth_bias < 0:
        raise FairseqTreeError(f"--tree-depth-bias must be 0 or more, got {args.tree_depth_bias}")


class WrittenTreeDecoding:
    """A fairseq decoder (mixed in before it) whose self-attention follows the written tree:
    the masks come from its input tokens alone, in full or a step at a time."""

    def init_written_tree(self, dictionary):
        open_id, close_id = (dictionary.index(s) for s in (OPEN_SYMBOL, CLOSE_SYMBOL))
        if dictionary.unk() in (open_id, close_id):
            raise FairseqTreeError("the syntactic decoder's dictionary has no tree brackets: "
                                   "train it with --target-trees")
        self.written_tree = WrittenTreeState(open_id, close_id)

    def extract_features(self, prev_output_tokens, encoder_out=None, incremental_state=None,
                         *args, **kwargs):
        masks = self.written_tree(prev_output_tokens, incremental_state)
        with written_tree_masks((layer.self_attn for layer in self.layers), masks):
            return super().extract_features(prev_output_tokens, encoder_out, incremental_state,
                                            *args, **kwargs)


class SyntacticDecoder(WrittenTreeDecoding, TransformerDecoderBase):
    """fairseq's Transformer decoder, attending over the tree it writes."""

    def __init__(self, cfg, dictionary, embed_tokens, output_projection=None):
        super().__init__(cfg, dictionary, embed_tokens, output_projection=output_projection)
        self.init_written_tree(dictionary)

    def build_decoder_layer(self, cfg, no_encoder_attn=False):
        return wrap_layer(SyntacticDecoderLayer(cfg, no_encoder_attn=no_encoder_attn), cfg)


class SyntacticTreeDecoder(WrittenTreeDecoding, TreeDecoder):
    """tree2seq's decoder (tree cross-attention), attending over the tree it writes."""

    layer_class = SyntacticTreeDecoderLayer

    def __init__(self, cfg, dictionary, embed_tokens, output_projection=None):
        super().__init__(cfg, dictionary, embed_tokens, output_projection=output_projection)
        self.init_written_tree(dictionary)


@register_model("syntactic_transformer")
class SyntacticTransformerModel(TransformerModel):
    """String-to-tree: fairseq's Transformer (on the source leaves, ``--tree-input
    leaves-only``) with the syntactic decoder. All Transformer options apply, plus
    ``SyntacticDecoderConfig``."""

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        gen_parser_from_dataclass(parser, SyntacticDecoderConfig(), delete_default=True)

    @classmethod
    def build_model(cls, args, task):
        transformer_syntactic_decoder(args)
        check_syntactic_decoder(args, task)
        return super().build_model(args, task)

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        return SyntacticDecoder(TransformerConfig.from_namespace(args), tgt_dict, embed_tokens)


@register_model_architecture("syntactic_transformer", "transformer_syntactic_decoder")
def transformer_syntactic_decoder(args):
    """Transformer base with the syntactic decoder."""
    for option in SyntacticDecoderConfig.__dataclass_fields__.values():
        if getattr(args, option.name, None) is None:
            setattr(args, option.name, option.default)
    base_architecture(args)
