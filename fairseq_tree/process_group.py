"""Data-parallel runs end with their process group torn down while Python is still whole.

fairseq's ``distributed_main`` ends with a barrier and never destroys the process group, so every
rank of ``fairseq-train``, ``fairseq-tree-train`` or a torchrun launch leaves it to interpreter
finalization. Gloo's barrier holds the collectives queued before it (the last ``all_reduce`` of
gradients or logging outputs), and a gloo worker thread may free that barrier after the main
thread has begun finalizing. Freeing a tensor that Python gave a collective takes the GIL; a
finalizing interpreter ends a thread that asks for it (``PyThread_exit_thread`` in ``take_gil``),
the unwinding meets the work's destructor and C++ aborts the process: ``terminate called without
an active exception``, return code -6, after a run that trained and saved correctly
(pytorch/pytorch#179291, #190489; the backtrace is in bench/RESULTS.md). Destroying the group
first, then dropping fairseq's own reference to its global group (where the last collectives
ran), lets that group's destructor join those threads while Python is whole. Groups that only saw
the start-up barrier (fairseq's default group, which other references keep) have idle threads.
"""

import atexit
import sys
import time

import torch.distributed as dist


def destroy_initialized_process_group() -> None:
    """Destroy the default process group and every group made from it, if one is initialized
    (nothing to do in a single-process run, or after the caller destroyed it)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
        let_workers_free_their_work()
        release_fairseq_global_group()


def let_workers_free_their_work(seconds: float = 0.2) -> None:
    """A worker frees a finished collective a moment after the caller's wait returns, and needs
    the GIL to do it; the destructor that joins it holds the GIL. Sleeping releases the GIL, so
    a worker still holding its last work frees it here rather than blocking that join."""
    time.sleep(seconds)


def release_fairseq_global_group() -> None:
    """Drop the group fairseq's ``get_global_group`` caches for the life of the process: while a
    Python reference holds a gloo group, destroying it leaves its worker threads running, and
    they end in finalization (the abort above). Without references the group's destructor joins
    them now."""
    utils = sys.modules.get("fairseq.distributed.utils")
    if utils is not None and hasattr(utils.get_global_group, "_global_group"):
        del utils.get_global_group._global_group


def destroy_process_group_at_exit() -> None:
    """Registration, at the plugin's import, which every fairseq command with ``--user-dir`` and
    every process it spawns performs before its distributed init: ``atexit`` handlers run after
    the main function and the other non-daemon threads have ended, before finalization begins."""
    atexit.unregister(destroy_initialized_process_group)  # one registration per process
    atexit.register(destroy_initialized_process_group)
