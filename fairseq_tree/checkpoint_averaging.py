"""The parameters of the last N checkpoints of a training run averaged (Vaswani et al., 2017),
for the configs runner and ``python -m fairseq_tree.cli.average``.

fairseq's own ``scripts/average_checkpoints.py`` is not part of the fairseq wheel, so this module
does the same job with fairseq's checkpoint functions: ``checkpoint_paths`` finds and orders the
checkpoints, ``load_checkpoint_to_cpu`` reads them (one at a time, so memory holds one model plus
the running sum), and the result keeps the last checkpoint's configuration and training state
with its model replaced by the element-wise mean. The optimizer state is dropped: it belongs to
no single one of the averaged models and generation never reads it.
"""

import logging
import os
from collections import OrderedDict
from collections.abc import Iterable

import torch
from fairseq.checkpoint_utils import checkpoint_paths, load_checkpoint_to_cpu

from fairseq_tree.errors import FairseqTreeError

logger = logging.getLogger("fairseq_tree.checkpoint_averaging")

# File names fairseq-train writes: checkpoint_{epoch}_{updates}.pt with --save-interval-updates
# (except at the end of an epoch, where fairseq writes checkpoint{epoch}.pt instead),
# checkpoint{epoch}.pt at the end of an epoch, checkpoint_last.pt whenever it saves. The group is
# the number to order them by. "last" is for short runs that evaluate their final model, "best"
# for the one fairseq kept for its best validation score (--best-checkpoint-metric).
PATTERNS = {"updates": r"checkpoint_\d+_(\d+)\.pt", "epochs": r"checkpoint(\d+)\.pt",
            "last": r"checkpoint_last\.pt", "best": r"checkpoint_best\.pt"}
NAMES = {"updates": "checkpoint_EPOCH_UPDATES.pt", "epochs": "checkpointEPOCH.pt",
         "last": "checkpoint_last.pt", "best": "checkpoint_best.pt"}


def last_checkpoints(directory: str, count: int, of: str) -> list[str]:
    """The ``count`` newest checkpoints of kind ``of`` ("updates" or "epochs") in ``directory``,
    oldest first. Fewer than ``count`` is an error: averaging fewer would silently change the
    experiment."""
    if count < 1:
        raise FairseqTreeError(
            f"the number of checkpoints to average must be >= 1, not {count}")
    if not os.path.isdir(directory):
        raise FairseqTreeError(f"{directory}: no such checkpoint folder")
    found = checkpoint_paths(directory, pattern=PATTERNS[of])  # newest first
    if len(found) < count:
        names = ", ".join(os.path.basename(p) for p in reversed(found)) or "none"
        raise FairseqTreeError(
            f"{directory}: need the last {count} checkpoints {NAMES[of]}, "
            f"found {len(found)}: {names}"
        )
    return list(reversed(found[:count]))


def average_states(models: Iterable[dict]) -> "OrderedDict[str, torch.Tensor]":
    """Element-wise mean of model state dicts. Floating tensors are summed in float64 and cast
    back to their own dtype; other tensors (integer buffers) must be equal in every model."""
    total, count = None, 0
    for count, model in enumerate(models, start=1):
        if total is None:
            total = OrderedDict((k, _start_sum(v)) for k, v in model.items())
            continue
        if model.keys() != total.keys():
            diff = sorted(set(model.keys()) ^ set(total.keys()))
            raise FairseqTreeError(f"checkpoint {count} has different parameters: {diff[:5]}")
        for name, value in model.items():
            _add(total, name, value, count)
    if total is None:
        raise FairseqTreeError("no checkpoints to average")
    return OrderedDict((k, _finish(v, count)) for k, v in total.items())


def _start_sum(value: torch.Tensor):
    if value.is_floating_point():
        return (value.to(torch.float64), value.dtype)
    return (value.clone(), None)


def _add(total: dict, name: str, value: torch.Tensor, index: int):
    acc, dtype = total[name]
    if acc.shape != value.shape:
        raise FairseqTreeError(f"checkpoint {index}: {name} has shape {tuple(value.shape)}, "
                               f"expected {tuple(acc.shape)}")
    if dtype is not None:
        acc += value.to(torch.float64)
    elif not torch.equal(acc, value):
        raise FairseqTreeError(
            f"checkpoint {index}: non-float tensor {name} differs between checkpoints")


def _finish(entry, count: int) -> torch.Tensor:
    acc, dtype = entry
    return acc if dtype is None else (acc / count).to(dtype)


def average_checkpoints(paths: list[str]) -> dict:
    """The last checkpoint's state with ``model`` replaced by the mean over ``paths``."""
    last = {}

    def models():
        nonlocal last
        for path in paths:
            logger.info(f"reading {path}")
            last = load_checkpoint_to_cpu(path)
            yield last["model"]

    averaged = average_states(models())
    state = {k: v for k, v in last.items() if k != "last_optimizer_state"}
    state["model"] = averaged
    state["averaged_checkpoints"] = [os.path.abspath(p) for p in paths]
    return state


def save_state(state: dict, path: str):
    """Write a checkpoint under ``path`` only once complete (a partial file never looks valid)."""
    partial = f"{path}.partial"
    try:
        torch.save(state, partial)
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)
