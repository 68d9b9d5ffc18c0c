"""Checkpoints load with torch's weights-only unpickler, never with arbitrary code execution.

torch >= 2.6 loads with ``weights_only=True``: the unpickler rebuilds tensors, containers and
only the classes it is told are safe, so a checkpoint cannot run code. fairseq's checkpoints hold
a few classes beyond tensors; ``allow_fairseq_checkpoints`` allows exactly those, found in the
checkpoints of every model this plugin trains and of fairseq's ``transformer`` and ``roberta``
(``tests/test_checkpoint_trust.py`` checks the list against real ones). A checkpoint that holds
any other class is refused with one line naming the file and the class.

Old checkpoints you trust that hold more (and nothing else) can still be loaded with torch's own
switch, ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1``, set by you for that one command.
"""

import argparse
import collections
import functools
import os
import pickle
import re
import typing

import torch
from fairseq import checkpoint_utils
from fairseq.distributed.utils import _TensorPlaceholder
from omegaconf import DictConfig, ListConfig
from omegaconf.base import ContainerMetadata, Metadata
from omegaconf.nodes import AnyNode, BooleanNode, BytesNode, FloatNode, IntegerNode, StringNode

from fairseq_tree.errors import FairseqTreeError

FAIRSEQ_CHECKPOINT_CLASSES = (
    argparse.Namespace,  # the model options of every checkpoint (cfg.model)
    # checkpoint_utils.load_checkpoint_to_cpu turns cfg into a DictConfig; data-parallel
    # training broadcasts that state from rank 0 to the others through torch.save / torch.load.
    DictConfig, ListConfig, ContainerMetadata, Metadata, typing.Any,
    AnyNode, BooleanNode, BytesNode, FloatNode, IntegerNode, StringNode,
    _TensorPlaceholder,  # what fairseq's broadcast_object puts where the tensors were
    collections.defaultdict, dict, list, int,  # the type fields of omegaconf's metadata
)

# torch's message: "... Unsupported global: GLOBAL posix.system was not an allowed global ..."
REFUSED_GLOBAL = re.compile(r"GLOBAL (\S+)")


class CheckpointRefused(FairseqTreeError):
    """A checkpoint holds a class that weights-only loading does not allow."""

    def __init__(self, path: str, error: pickle.UnpicklingError):
        found = REFUSED_GLOBAL.search(str(error))
        what = found.group(1) if found else str(error).splitlines()[-1].strip()
        super().__init__(
            f"{path}: refused: the checkpoint holds {what}, which a fairseq checkpoint does "
            "not; loading it could run code (if you trust the file, see "
            "fairseq_tree.checkpoints)")


def allow_fairseq_checkpoints():
    """Let torch's weights-only unpickler rebuild the classes fairseq checkpoints hold."""
    torch.serialization.add_safe_globals(list(FAIRSEQ_CHECKPOINT_CLASSES))


def load_checkpoint(path, map_location="cpu", mmap=False) -> dict:
    """``torch.load`` of a checkpoint, weights only; ``CheckpointRefused`` for any other class.
    With ``mmap`` the tensors stay on disk until they are read."""
    try:
        return torch.load(path, map_location=map_location, weights_only=True, mmap=mmap)
    except pickle.UnpicklingError as error:
        raise CheckpointRefused(str(path), error) from None


class CheckpointError(FairseqTreeError):
    """A file that is no fairseq checkpoint (or not of the model asked for)."""


def read_checkpoint(path: str) -> dict:
    """A checkpoint's state, weights only; ``FileNotFoundError`` or ``CheckpointError`` naming
    the file when it is missing or no fairseq checkpoint."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such checkpoint file")
    try:
        state = checkpoint_utils.load_checkpoint_to_cpu(path)
    except FairseqTreeError:
        raise  # the weights-only loader's refusal names the file and the class
    except Exception as err:  # torch.load raises many kinds for a file that is no checkpoint
        raise CheckpointError(f"{path}: not a fairseq checkpoint ({type(err).__name__}: "
                              f"{err})") from None
    if not isinstance(state, dict) or state.get("cfg") is None or "model" not in state:
        raise CheckpointError(f"{path}: not a fairseq checkpoint (no cfg and model)")
    return state


def checkpoint_updates(path) -> int:
    """The updates a fairseq checkpoint was saved after. The file is mapped, not read: a resume
    asks this of checkpoint_last.pt, whose Adam state is twice the model."""
    try:
        state = load_checkpoint(path, mmap=True)
    except RuntimeError:  # torch maps only its zip format; an older file is read whole
        state = load_checkpoint(path)
    return state["optimizer_history"][-1]["num_updates"]


def refuse_unsafe_checkpoints():
    """fairseq's ``load_checkpoint_to_cpu``, which every fairseq command and ``from_pretrained``
    load through, with a refusal in one line (``CheckpointRefused``) in place of torch's
    many-line advice, which ends by suggesting ``weights_only=False``."""
    load = checkpoint_utils.load_checkpoint_to_cpu
    if getattr(load, "refuses_unsafe_checkpoints", False):
        return

    @functools.wraps(load)
    def load_checkpoint_to_cpu(path, *args, **kwargs):
        try:
            return load(path, *args, **kwargs)
        except pickle.UnpicklingError as error:
            raise CheckpointRefused(str(path), error) from None

    load_checkpoint_to_cpu.refuses_unsafe_checkpoints = True
    checkpoint_utils.load_checkpoint_to_cpu = load_checkpoint_to_cpu
