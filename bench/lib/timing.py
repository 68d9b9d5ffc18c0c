"""Time and memory of one call, as the benchmarks measure them: the median wall time after
warm-up calls (the device synchronized), and the peak bytes a call allocates on top of what
existed (PyTorch's memory timeline on the CPU, the peak counter on CUDA)."""


import contextlib
import json
import os
import statistics
import tempfile
import time
import warnings

import torch


def seconds(function, repeats: int, device: str, warm_ups: int = 1) -> float:
    """Median wall time of ``repeats`` calls, after ``warm_ups`` calls (none where the caller
    has already run it)."""
    for _ in range(warm_ups):
        function()
    times = []
    for _ in range(repeats):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        function()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@contextlib.contextmanager
def cuda_peak_kept():
    """A function returning ``torch.cuda.max_memory_allocated()`` since the block began, though
    something inside resets the counter: fairseq's Trainer does at every ``--log-interval``
    update (to log gb_free), so a bare read after its updates sees only what was allocated
    since then. Each reset in the block notes the peak first."""
    peaks, reset = [], torch.cuda.reset_peak_memory_stats

    def noting_reset(*args, **kwargs):
        peaks.append(torch.cuda.max_memory_allocated())
        reset(*args, **kwargs)

    reset()
    torch.cuda.reset_peak_memory_stats = noting_reset
    try:
        yield lambda: max([*peaks, torch.cuda.max_memory_allocated()])
    finally:
        torch.cuda.reset_peak_memory_stats = reset


def peak_bytes(function, device: str) -> int:
    """Bytes allocated by one call at its peak, on top of what existed before it."""
    if device == "cuda":
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        with cuda_peak_kept() as peak:
            function()
            torch.cuda.synchronize()
            return peak() - before
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                 with_stack=True) as profiler:
        function()
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # the timeline is the CPU's only record
        path = os.path.join(folder, "timeline.json")
        profiler.export_memory_timeline(path, device="cpu")
        with open(path) as handle:
            _, sizes = json.load(handle)
    return max((sum(row) for row in sizes), default=0)
