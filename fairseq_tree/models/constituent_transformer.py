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
from typing import List, Optional

import torch
from fairseq.distributed import fsdp_wrap
from fairseq.models import register_model, register_model_architecture
from fairseq.models.roberta.model import RobertaEncoder, RobertaModel
from fairseq.models.roberta.model import base_architecture as roberta_base_architecture
from fairseq.models.transformer import TransformerConfig, TransformerEncoder
from fairseq.modules.transformer_sentence_encoder import init_bert_params
from fairseq.utils import safe_getattr, safe_hasattr

from fairseq_tree.errors import FairseqTreeError
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


class MaskedLMCheckpointError(FairseqTreeError):
    """A checkpoint or dictionary that is not a usable masked LM; ``argument`` says which of the
    two (``checkpoint`` or ``dictionary``), so a command line can name its own flag."""

    def __init__(self, argument: str, message: str):
        super().__init__(message)
        self.argument = argument


def read_masked_lm_checkpoint(path: str, model_name: Optional[str]) -> dict:
    """The checkpoint's state, checked to be a fairseq model (of ``model_name``, when given)."""
    from fairseq import checkpoint_utils
    from fairseq.models import ARCH_MODEL_NAME_REGISTRY

    if not os.path.isfile(path):
        raise MaskedLMCheckpointError("checkpoint", f"{path}: no such file")
    try:
        state = checkpoint_utils.load_checkpoint_to_cpu(path)
        arch = getattr(state["cfg"].model, "arch", None) or getattr(state["cfg"].model, "_name")
    except Exception as err:  # torch.load raises many kinds for a file that is no checkpoint
        raise MaskedLMCheckpointError("checkpoint", f"{path}: not a fairseq checkpoint "
                                      f"({type(err).__name__}: {err})") from None
    if model_name and ARCH_MODEL_NAME_REGISTRY.get(arch) != model_name:
        raise MaskedLMCheckpointError(
            "checkpoint", f"{path}: its model is {arch!r}, not a {model_name} masked LM (train "
            f"one with --task masked_lm --arch {model_name})")
    return state


def read_masked_lm_dictionary(path: Optional[str], state: dict, checkpoint: str):
    """The model's dictionary (default: dict.txt of the data folder it was trained on) plus
    masked_lm's ``<mask>``, checked against the size of the model's embeddings."""
    from fairseq.data import Dictionary

    path = path or os.path.join(state["cfg"].task.data.split(os.pathsep)[0], "dict.txt")
    if not os.path.isfile(path):
        raise MaskedLMCheckpointError("dictionary", f"{path}: no such file (give the dict.txt of "
                                      "the data the model was trained on)")
    try:
        dictionary = Dictionary.load(path)
    except (ValueError, RuntimeError) as err:
        reason = " ".join(str(err).split())  # fairseq's message quotes the line, line break and all
        raise MaskedLMCheckpointError("dictionary", f"{path}: not a fairseq dictionary ({reason})"
                                      ) from None
    dictionary.add_symbol("<mask>")
    rows = state["model"]["encoder.sentence_encoder.embed_tokens.weight"].size(0)
    if len(dictionary) != rows:
        raise MaskedLMCheckpointError(
            "dictionary", f"{path}: {len(dictionary)} symbols with <mask>, but {checkpoint} was "
            f"trained with {rows}: not its dictionary")
    return dictionary


def build_masked_lm(state: dict, dictionary):
    """The masked LM of the checkpoint, in eval mode, on the GPU when there is one."""
    from fairseq.tasks.masked_lm import MaskedLMTask

    task = MaskedLMTask(state["cfg"].task, dictionary)
    model = task.build_model(state["cfg"].model)
    model.load_state_dict(state["model"], strict=True)
    return model.eval().to("cuda" if torch.cuda.is_available() else "cpu")


def load_masked_lm(path: str, dictionary_file: Optional[str] = None,
                   model_name: Optional[str] = None) -> "MaskedLMHubInterface":
    """A masked LM checkpoint (of ``model_name``'s model, when given) for inference."""
    import fairseq_tree.models  # noqa: F401  (registers the models a checkpoint may name)

    state = read_masked_lm_checkpoint(path, model_name)
    dictionary = read_masked_lm_dictionary(dictionary_file, state, path)
    return MaskedLMHubInterface(build_masked_lm(state, dictionary), dictionary)


class MaskedLMHubInterface(torch.nn.Module):
    """A trained masked LM and its dictionary, for inference (as fairseq's
    ``RobertaHubInterface``): sentences ``<s> units </s>`` as masked_lm builds its samples, and
    a constituent_transformer's links between consecutive units."""

    def __init__(self, model, dictionary):
        super().__init__()
        self.model, self.dictionary = model, dictionary

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def mask_idx(self) -> int:
        return self.dictionary.index("<mask>")

    @property
    def num_layers(self) -> int:
        return len(self.model.encoder.sentence_encoder.layers)

    def max_positions(self) -> int:
        return self.model.max_positions()

    def encode(self, units: List[str]) -> torch.Tensor:
        """``<s> units </s>`` as the model's ids."""
        return torch.tensor([self.dictionary.bos(), *map(self.dictionary.index, units),
                             self.dictionary.eos()])

    @torch.no_grad()
    def link_probabilities(self, batch: List[torch.Tensor]) -> List[List[List[float]]]:
        """For each encoded sentence, a^l between its consecutive units at every layer:
        L x (units - 1) (the links to ``<s>`` and ``</s>`` left out)."""
        from fairseq.data.data_utils import collate_tokens

        tokens = collate_tokens(batch, self.dictionary.pad()).to(self.device)
        _, extra = self.model.encoder.extract_features(tokens)
        links = extra["link_probabilities"].float().cpu()  # L x B x (T-1)
        # Unit j sits at position j + 1 (after <s>); links 1 .. units-1 join unit j and j + 1.
        return [links[:, row, 1:len(ids) - 2].tolist() for row, ids in enumerate(batch)]


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
