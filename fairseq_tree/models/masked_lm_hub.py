"""The masked LM's hub (``ConstituentTransformerModel.from_pretrained``, ``--parser induced``,
``bench/lib/masked_lm.py``): a ``masked_lm`` checkpoint read weights only
(``checkpoints.read_checkpoint``), its dictionary, and the model's link probabilities. It sits
with the models, below the parsers: the induced parser reads trees off such a model.
"""

import os
from typing import List, Optional

import torch

from fairseq_tree.checkpoints import CheckpointError, read_checkpoint
from fairseq_tree.errors import FairseqTreeError


class MaskedLMCheckpointError(FairseqTreeError):
    """A checkpoint or dictionary that is not a usable masked LM; ``argument`` says which of the
    two (``checkpoint`` or ``dictionary``), so a command line can name its own flag."""

    def __init__(self, argument: str, message: str):
        super().__init__(message)
        self.argument = argument


def read_masked_lm_checkpoint(path: str, model_name: Optional[str]) -> dict:
    """The checkpoint's state, checked to be a fairseq model (of ``model_name``, when given);
    its problems as ``MaskedLMCheckpointError`` (a command line names its own flag)."""
    from fairseq.models import ARCH_MODEL_NAME_REGISTRY

    try:
        state = read_checkpoint(path)
    except FileNotFoundError:
        raise MaskedLMCheckpointError("checkpoint", f"{path}: no such file") from None
    except CheckpointError as err:
        raise MaskedLMCheckpointError("checkpoint", str(err)) from None
    except FairseqTreeError as err:  # refused by the weights-only loader
        raise MaskedLMCheckpointError("checkpoint", f"{path}: not a fairseq checkpoint "
                                      f"({err})") from None
    model = state["cfg"].model
    arch = getattr(model, "arch", None) or getattr(model, "_name", None)
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
