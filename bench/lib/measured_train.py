"""fairseq-tree-train with two measurements fairseq's log lacks, printed as lines of their own:

    update_ends U:T U:T ...        seconds (time.perf_counter) at the end of each update U
    peak_memory_allocated BYTES    torch.cuda.max_memory_allocated() over the run (though
                                   fairseq resets it every --log-interval updates): parameters,
                                   optimizer state, activations and gradients of the largest update

    python -m bench.lib.measured_train DATA-BIN --user-dir fairseq_tree ...   # fairseq-train's arguments

bench/train_end_to_end.py runs each timed run through it on CUDA. fairseq logs its clocks in
whole seconds, too coarse for a few hundred updates of a GPU; the end of update k less the end
of update j is the time of updates j+1..k with everything between them (the loader's next
batch, logging, and any step fp16 skipped for a gradient overflow, which fairseq does not count
as an update), as fairseq's wall clock counts it. On CUDA each update ends with a
synchronization, so that its end is the GPU's (fairseq already waits for the GPU in every
``--fp16`` update, to check the gradients for overflow). Without a GPU only the ends are printed.
"""

import contextlib
import time

import torch
from fairseq.trainer import Trainer

from fairseq_tree.training import train_from_command_line

from bench.lib.timing import cuda_peak_kept

ENDS, PEAK = "update_ends ", "peak_memory_allocated "


def recording_ends(train_step, ends: dict):
    """``Trainer.train_step`` noting in ``ends`` the end time of every update by its number."""

    def timed_train_step(self, samples, *args, **kwargs):
        output = train_step(self, samples, *args, **kwargs)
        if self.cuda:
            torch.cuda.synchronize()
        ends[self.get_num_updates()] = time.perf_counter()
        return output

    return timed_train_step


def main():
    ends, train_step = {}, Trainer.train_step
    Trainer.train_step = recording_ends(train_step, ends)
    cuda = torch.cuda.is_available()
    with cuda_peak_kept() if cuda else contextlib.nullcontext() as peak:
        try:
            train_from_command_line()
        finally:
            Trainer.train_step = train_step
            print(ENDS + " ".join(f"{u}:{t:.6f}" for u, t in sorted(ends.items())), flush=True)
            if cuda:
                print(f"{PEAK}{peak()}", flush=True)


if __name__ == "__main__":
    main()
