"""The Tree Transformer masked language model (Wang et al., EMNLP 2019) and its same-size plain
Transformer baseline, for fairseq's ``masked_lm`` task.

    fairseq-train data-bin --user-dir fairseq_tree --task masked_lm --sample-break-mode eos \\
        --arch constituent_transformer --criterion masked_lm ...

``constituent_transformer`` is fairseq's ``roberta`` model whose encoder layers use constituent
attention (``fairseq_tree.modules.constituent_attention``); only the hooks that build the
encoder and its layers change. ``plain_transformer_mlm`` is fairseq's ``roberta`` of the same size
and settings. Sentences must reach the model whole (``--sample-break-mode eos``): the links and
the prior are read within a sample.
"""

import os
from typing import Optional

from fairseq.distributed import fsdp_wrap
from fairseq.models import register_model, register_model_architecture
from fairseq.models.roberta.model import RobertaEncoder, RobertaModel
from fairseq.models.roberta.model import base_architecture as roberta_base_architecture
from fairseq.models.transformer import TransformerConfig, TransformerEncoder
from fairseq.modules.transformer_sentence_encoder import init_bert_params
from fairseq.utils import safe_getattr, safe_hasattr

from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.models.masked_lm_hub import MaskedLMHubInterface, load_masked_lm
from fairseq_tree.modules.constituent_attention import ConstituentEncoderLayer, LinkChain


class ConstituentTransformerEncoder(TransformerEncoder):
    """fairseq's Transformer encoder with constituent layers. Its output dict also holds
    ``link_probabilities``: [L x B x (T-1)], a^l of every layer (the input of Algorithm 1)."""

    def __init__(self, args, dictionary, embed_tokens):
        self.chain = LinkChain()  # read by build_encoder_layer, which fairseq's __init__ calls
        super().__init__(args, dictionary, embed_tokens)

    def build_encoder_layer(self, args):
        cfg = TransformerConfig.from_namespace(args)
        return fsdp_wrap(ConstituentEncoderLayer(cfg, self.chain),
                         min_num_params=cfg.min_params_to_wrap)

    def forward(self, src_tokens, src_lengths=None, return_all_hiddens: bool = False,
                token_embeddings=None):
        """fairseq's encoder forward; the layers hand a^l to each other through ``chain``,
        started here with the batch's padding."""
        self.chain.start(src_tokens.eq(self.padding_idx))
        out = super().forward(src_tokens, src_lengths, return_all_hiddens, token_embeddings)
        out["link_probabilities"] = [self.chain.stacked()]  # L x B x (T-1)
        return out


class ConstituentRobertaEncoder(RobertaEncoder):
    """RoBERTa's encoder (embeddings, LM head) around a ``ConstituentTransformerEncoder``."""

    def build_encoder(self, args, dictionary, embed_tokens):
        encoder = ConstituentTransformerEncoder(args, dictionary, embed_tokens)
        encoder.apply(init_bert_params)
        return encoder

    def extract_features(self, src_tokens, return_all_hiddens=False, **kwargs):
        """Features B x T x C and a dict with ``inner_states`` and ``link_probabilities``
        (L x B x (T-1))."""
        encoder_out = self.sentence_encoder(src_tokens, return_all_hiddens=return_all_hiddens,
                                            token_embeddings=kwargs.get("token_embeddings"))
        features = encoder_out["encoder_out"][0].transpose(0, 1)  # T x B x C -> B x T x C
        return features, {
            "inner_states": encoder_out["encoder_states"] if return_all_hiddens else None,
            "link_probabilities": encoder_out["link_probabilities"][0],  # L x B x (T-1)
        }


@register_model("constituent_transformer")
class ConstituentTransformerModel(RobertaModel):
    """Tree Transformer: Wang, Lee and Chen, "Tree Transformer: Integrating Tree Structures into
    Self-Attention", EMNLP 2019. RoBERTa's masked LM whose attention is constrained by the
    constituent prior; every RoBERTa option applies."""

    @classmethod
    def from_pretrained(cls, model_name_or_path: str, checkpoint_file: str = "model.pt",
                        dictionary_file: Optional[str] = None) -> MaskedLMHubInterface:
        """A trained constituent_transformer for reading its links (``link_probabilities``):
        the checkpoint ``checkpoint_file`` in the folder ``model_name_or_path``, with the
        dictionary ``dictionary_file`` (default: the dict.txt of its training data)."""
        return load_masked_lm(os.path.join(model_name_or_path, checkpoint_file), dictionary_file,
                              "constituent_transformer")

    @classmethod
    def build_model(cls, args, task):
        constituent_transformer(args)
        if safe_getattr(args, "checkpoint_activations", False) or safe_getattr(
                args, "encoder_layerdrop", 0.0) > 0:
            # Both re-run or skip layers, which the chain of a^l from layer to layer forbids.
            raise FairseqTreeError("constituent_transformer supports neither --checkpoint-activations "
                             "nor --encoder-layerdrop")
        if not safe_hasattr(args, "max_positions"):
            args.max_positions = safe_getattr(args, "tokens_per_sample", task.max_positions())
        return cls(args, ConstituentRobertaEncoder(args, task.source_dictionary))


def paper_size(args):
    """Section 7.1: 10 layers, d_model 512, 8 heads, FFN 2048, dropout 0.1."""
    args.encoder_layers = safe_getattr(args, "encoder_layers", 10)
    args.encoder_embed_dim = safe_getattr(args, "encoder_embed_dim", 512)
    args.encoder_ffn_embed_dim = safe_getattr(args, "encoder_ffn_embed_dim", 2048)
    args.encoder_attention_heads = safe_getattr(args, "encoder_attention_heads", 8)


def tiny_size(args):
    """For CPU: 6 layers (Algorithm 1 reads layers 2-5 with the default minimum layer), d 256, 4
    heads, FFN 1024."""
    args.encoder_layers = safe_getattr(args, "encoder_layers", 6)
    args.encoder_embed_dim = safe_getattr(args, "encoder_embed_dim", 256)
    args.encoder_ffn_embed_dim = safe_getattr(args, "encoder_ffn_embed_dim", 1024)
    args.encoder_attention_heads = safe_getattr(args, "encoder_attention_heads", 4)


def shared_settings(args):
    """Settings of both models: pre-LayerNorm and no embedding LayerNorm, as the authors' code
    (the Annotated Transformer), dropout 0.1; the rest is RoBERTa's."""
    args.dropout = safe_getattr(args, "dropout", 0.1)
    args.encoder_normalize_before = safe_getattr(args, "encoder_normalize_before", True)
    args.layernorm_embedding = safe_getattr(args, "layernorm_embedding", False)
    roberta_base_architecture(args)


@register_model_architecture("constituent_transformer", "constituent_transformer")
def constituent_transformer(args):
    paper_size(args)
    shared_settings(args)


@register_model_architecture("constituent_transformer", "constituent_transformer_tiny")
def constituent_transformer_tiny(args):
    tiny_size(args)
    constituent_transformer(args)


@register_model_architecture("roberta", "plain_transformer_mlm")
def plain_transformer_mlm(args):
    """The baseline: fairseq's RoBERTa with the size and settings of constituent_transformer."""
    paper_size(args)
    shared_settings(args)


@register_model_architecture("roberta", "plain_transformer_mlm_tiny")
def plain_transformer_mlm_tiny(args):
    tiny_size(args)
    plain_transformer_mlm(args)
