"""The one way a checkpoint is loaded for inference: checkpoint + data folder (+ recipe), weights
only (``fairseq_tree.checkpoints``), with the text steps the hubs will read raw text by.

    loaded = load_for_inference("checkpoints/tree2seq", "checkpoint_best.pt",
                                recipe=Recipe.read("data/bible-en-fr-sample"))
    loaded.cfg, loaded.task, loaded.models, loaded.text   # the text steps: recipe's + given

The translation, classification and masked-LM hubs are thin layers over it; their CLIs call
them. Errors name the file or folder that is missing or not a checkpoint.
"""

import os
from dataclasses import dataclass, fields
from typing import Dict, List, Optional

from fairseq import checkpoint_utils
from fairseq.dataclass.utils import overwrite_args_by_name

from fairseq_tree.checkpoints import read_checkpoint
from fairseq_tree.data.recipe import Recipe, TextSteps
from fairseq_tree.inference.text import recipe_steps

# BPE files fairseq's hub takes from a model folder, and the text step each gives.
MODEL_FOLDER_BPE = {"code": "bpe_codes", "bpecodes": "bpe_codes",
                    "sentencepiece.bpe.model": "sentencepiece_model"}
TEXT_STEPS = {f.name for f in fields(TextSteps)}


@dataclass
class Loaded:
    """A checkpoint (or an ensemble) ready for inference."""

    cfg: object
    task: object
    models: List
    text: TextSteps
    state: dict  # the first checkpoint's, as read (its cfg, as trained)


def data_folder(model_folder: str, data: Optional[str]) -> str:
    """The data folder as fairseq resolves it (a path starting with "." is inside the model
    folder), checked: fairseq turns a missing folder into an obscure failure later."""
    path = data or "."
    if path.startswith("."):
        path = os.path.join(model_folder, path)
    if not os.path.isdir(path):
        raise FileNotFoundError(f"{path}: no such data folder (data_name_or_path)")
    return os.path.abspath(path)


def text_steps(model_folder: str, recipe: Optional[Recipe], given: Dict) -> TextSteps:
    """The recipe's text steps (or the defaults) with the ones given over them; BPE files in the
    model folder count as given when nothing else names one (as fairseq's hub finds them)."""
    given = dict(given)
    if not (given.get("bpe_codes") or given.get("sentencepiece_model")
            or recipe and (recipe.text.bpe_codes or recipe.text.sentencepiece_model)):
        for name, step in MODEL_FOLDER_BPE.items():
            path = os.path.join(model_folder, name)
            if os.path.exists(path):
                given[step] = path
                break
    steps = recipe_steps(recipe) if recipe is not None else TextSteps()
    return steps.completed(given)


def load_for_inference(model_folder: str, checkpoint_file: str = "model.pt",
                       data: Optional[str] = None, text: Optional[Dict] = None,
                       recipe: Optional[Recipe] = None, overrides: Optional[Dict] = None,
                       state: Optional[dict] = None) -> Loaded:
    """Load ``checkpoint_file`` (":"-separated names: an ensemble) of ``model_folder`` with the
    dictionaries of ``data``.

    ``text``: keywords of a hub; the ``TextSteps`` among them complete the recipe's, the others
    (not None) override the checkpoint's options by name, as fairseq's ``from_pretrained``
    (``batch_size``, ``max_tokens``, ``source_lang``, ...); ``overrides`` (the recipe's languages)
    come under those; ``bpe``, fairseq's name for the BPE kind, follows from the file given.
    ``state``: the first checkpoint, already read."""
    if not os.path.isdir(model_folder):
        raise FileNotFoundError(f"{model_folder}: no such model folder")
    given = {key: value for key, value in (text or {}).items() if key in TEXT_STEPS}
    options = {key: value for key, value in (text or {}).items()
               if key not in TEXT_STEPS and key != "bpe" and value is not None}
    options = {**(overrides or {}), **options, "data": data_folder(model_folder, data)}
    paths = [os.path.join(model_folder, name) for name in checkpoint_file.split(os.pathsep)]
    states = [state if state is not None and k == 0 else read_checkpoint(path)
              for k, path in enumerate(paths)]
    for loaded_state in states:
        overwrite_args_by_name(loaded_state["cfg"], options)
    models = []
    cfg = task = None
    for path, loaded_state in zip(paths, states):
        ensemble, cfg, task = checkpoint_utils.load_model_ensemble_and_task(
            [path], task=task, state=loaded_state)
        models += ensemble
    return Loaded(cfg, task, models, text_steps(model_folder, recipe, given), states[0])
