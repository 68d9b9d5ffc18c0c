"""One training update, operator by operator: tree2seq against fairseq's Transformer on the same
sentences, at the paper's sizes and in every precision fairseq-train offers.

    python -m bench.operator_account                         # data-bin built from tests/data/bible
    python -m bench.operator_account --data data/bible-en-fr-sample/data-bin \\
        --json bench/results/operator-account-cpu.json
    python -m bench.operator_account --device cuda --kernel-times ...      # on a GPU

For each size (``--sizes``: IWSLT, ``tree2seq_iwslt_de_en`` against ``transformer_iwslt_de_en``;
WMT, ``tree2seq_wmt_en_de`` against ``transformer_wmt_en_de``), each precision (``--precisions``:
float32, ``--fp16``, ``--memory-efficient-fp16``, ``--amp``) and each model, fairseq's task,
model, criterion and ``Trainer`` are built from the quickstart config's fairseq-train arguments
(``bench/training.py``), and one ``train_step`` (forward, backward, gradient scaling and
clipping, Adam) runs on one batch of sentences, the same sentences for both models, after a first
update on it that creates Adam's state. Every operator torch dispatches in that update is
recorded (``torch.utils._python_dispatch.TorchDispatchMode``, below autograd: what each
``Tensor`` call becomes, views left out as they launch nothing) with

  phase     forward (loss included), backward (autograd runs it), optimizer (everything after:
            gradient scaling, the norm and its clipping, Adam, fairseq's logging reads)
  caller    the innermost function outside torch that asked for it: in the forward the Python
            stack; in the backward the stack that created the autograd node (anomaly mode's
            record). A caller in fairseq_tree/ makes a tree-specific operator
  half      whether a float16 or bfloat16 tensor goes in or comes out

and, for every accumulating scatter (``index_add``, ``scatter_add``, ``index_put`` with
``accumulate``, the embedding's backward, ``scatter_reduce``), its dtype, the elements it adds,
its indices and how many of them repeat an index already seen. In the forward of the tree path,
the operators whose result the host must read (a device-to-host synchronisation on a GPU:
``nonzero``, ``.item()``, ``repeat_interleave`` with tensor counts, boolean indexing).

On the CPU ``--fp16`` runs with ``--fp16-no-flatten-grads`` (fairseq's flat float32 master copy
is made on a CUDA device), which changes the optimizer's operators, not the model's; ``--amp``
runs under ``torch.autocast("cpu", float16)`` in place of CUDA's autocast, which fairseq's
trainer turns on only on a GPU (the CPU's autocast lists differ from CUDA's a little). With
``--kernel-times`` on CUDA, torch.profiler's CUDA time of each operator over ``--profile-updates``
more updates is added (the same sentences, the clock not started until they are on the device):
each row's self time, where a kernel's time stands in two or three rows (the kernel by name, the
aten operator that launched it, the annotated ranges); ``kernel_time_table`` counts it once, under
its aten operator. (``bench/results/operator-account-cuda-h200.json`` also holds ``total_ms``,
the sum of every row, which counted it two or three times.)
"""

import argparse
import contextlib
import re
import shlex
import sys
import time
from collections import Counter
from pathlib import Path

import fairseq
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import fairseq_tree

from bench.lib.report import load_average, machine, markdown_table
from bench.lib.fairseq_training import (
    MODELS, build_setup, chosen_batches, collate, config_parser, fresh, run_benchmark, train_argv,
)

aten = torch.ops.aten
SIZES = {"iwslt": ("tree2seq_iwslt_de_en", "transformer_iwslt_de_en"),
         "wmt": ("tree2seq_wmt_en_de", "transformer_wmt_en_de")}
PRECISIONS = {"float32": "", "fp16": "--fp16", "memory-efficient-fp16": "--memory-efficient-fp16",
              "amp": "--amp"}
HALF = (torch.float16, torch.bfloat16)
ROOTS = {"fairseq_tree": Path(fairseq_tree.__file__).resolve().parent,
         "fairseq": Path(fairseq.__file__).resolve().parent}
TORCH = str(Path(torch.__file__).resolve().parent)
HERE = str(Path(__file__).resolve())

# Operations whose result the host must read before going on: on a GPU each waits for the
# device (what torch.cuda.set_sync_debug_mode reports). .item(), bool(), int() and float() of a
# tensor all dispatch to _local_scalar_dense.
SYNCING = {aten._local_scalar_dense, aten.nonzero, aten.masked_select, aten.unique_consecutive,
           aten._unique2, aten.unique_dim}
# Operations that add values into a tensor at indices, where two indices may be the same.
SCATTERS = {aten.index_add, aten.index_add_, aten.scatter_add, aten.scatter_add_,
            aten.index_put, aten.index_put_, aten._index_put_impl_, aten.scatter_reduce,
            aten.scatter_reduce_, aten.embedding_dense_backward, aten.index_reduce,
            aten.index_reduce_}


def host_reads(func, args) -> bool:
    """Whether the operation makes the host wait for a device value (see ``SYNCING``)."""
    if func.overloadpacket in SYNCING:
        return True
    if func is aten.repeat_interleave.Tensor:  # counts given as a tensor
        return True
    if func.overloadpacket in (aten.index, aten.index_put, aten.index_put_):  # boolean masks
        return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in args[1])
    return False


def accumulated(func, args, kwargs) -> dict | None:
    """For an accumulating scatter, what it adds: destination dtype, the elements added, its
    indices and how many of them repeat one already seen; None for any other operation (an
    ``index_put`` without ``accumulate`` overwrites, it does not add)."""
    packet = func.overloadpacket
    if packet not in SCATTERS:
        return None
    kwargs = kwargs or {}
    if packet in (aten.index_put, aten.index_put_, aten._index_put_impl_):
        if not (args[3] if len(args) > 3 else kwargs.get("accumulate", False)):
            return None
        destination, values = args[0], args[2]
        indices = [i for i in args[1] if i is not None]
        shape = [i.shape for i in indices]
        flat = torch.stack([i.expand(torch.broadcast_shapes(*shape)).reshape(-1).long().cpu()
                            for i in indices]) if indices else torch.zeros(1, 0)
        distinct = flat.unique(dim=1).size(1) if flat.numel() else 0
        count, added = flat.size(1), values.numel()
    elif packet in (aten.scatter_reduce, aten.scatter_reduce_, aten.index_reduce,
                    aten.index_reduce_):
        if (args[4] if len(args) > 4 else kwargs.get("reduce")) not in ("sum", "mean"):
            return None
        destination, index, source = args[0], args[2], args[3]
        count, added = index.numel(), source.numel()
        distinct = _distinct(index, args[1] if packet in (aten.scatter_reduce,
                                                         aten.scatter_reduce_) else None)
    elif packet is aten.embedding_dense_backward:
        destination, index = args[0], args[1]
        count, added, distinct = index.numel(), destination.numel(), _distinct(index)
    else:  # index_add(self, dim, index, source), scatter_add(self, dim, index, src)
        destination, index, source = args[0], args[2], args[3]
        count, added = index.numel(), source.numel()
        distinct = _distinct(index, args[1] if packet in (aten.scatter_add,
                                                         aten.scatter_add_) else None)
    return {"dtype": str(destination.dtype).replace("torch.", ""), "elements_added": added,
            "indices": count, "repeated_indices": count - distinct}


def _distinct(index, dim=None) -> int:
    """Distinct targets of an index: for scatter (``dim`` given) each element of the index
    names one target position together with its coordinates on the other dimensions."""
    index = index.detach().cpu().long()
    if dim is None or index.dim() == 1:
        return index.reshape(-1).unique().numel()
    coords = torch.stack(torch.meshgrid(*[torch.arange(s) for s in index.shape], indexing="ij"))
    coords[dim] = index
    return coords.reshape(index.dim(), -1).unique(dim=1).size(1)


def tensors_in(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from tensors_in(item)


def in_half(args, out) -> bool:
    return any(t.dtype in HALF for t in (*tensors_in(args), *tensors_in(out)))


def caller_name(filename: str, function: str) -> str | None:
    """``package/path.py:function`` for a frame of fairseq_tree or fairseq, else None."""
    path = Path(filename)
    for package, root in ROOTS.items():
        if path.is_relative_to(root):
            return f"{package}/{path.relative_to(root)}:{function}"
    return None


def forward_caller() -> str:
    """The innermost function outside torch (and this file) on the Python stack."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(TORCH) and filename != HERE:
            return caller_name(filename, frame.f_code.co_name) or "other"
        frame = frame.f_back
    return "other"


FRAME = re.compile(r'File "(.*)", line \d+, in (\S+)')


def backward_caller(node) -> str:
    """The innermost function outside torch that created the autograd ``node``, from the
    forward stack anomaly mode keeps with it."""
    if "AccumulateGrad" in node.name():
        return "autograd: accumulate into .grad"
    for entry in reversed(node.metadata.get("traceback_") or []):
        match = FRAME.search(entry)
        if match and not match.group(1).startswith(TORCH) and match.group(1) != HERE:
            return caller_name(*match.groups()) or "other"
    return "other"


class OperatorAccount(TorchDispatchMode):
    """Records every non-view operator dispatched while it is on (see the module's text)."""

    def __init__(self):
        super().__init__()
        self.counts = Counter()  # (phase, operator, caller, half) -> calls
        self.scatters = []
        self.host_reads = []
        self.backward_seen = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func.is_view:
            return out
        node = torch._C._current_autograd_node()
        if node is not None:
            self.backward_seen, phase, caller = True, "backward", backward_caller(node)
        else:
            phase = "optimizer" if self.backward_seen else "forward"
            caller = forward_caller()
        name = func.overloadpacket.__name__
        self.counts[(phase, name, caller, in_half(args, out))] += 1
        scatter = accumulated(func, args, kwargs)
        if scatter is not None:
            self.scatters.append({"operator": name, "phase": phase, "caller": caller, **scatter})
        if phase == "forward" and caller.startswith("fairseq_tree/") and host_reads(func, args):
            self.host_reads.append({"operator": str(func), "caller": caller})
        return out

    def summary(self) -> dict:
        by = lambda key: dict(sorted(_sum_by(self.counts, key).items(), key=lambda kv: -kv[1]))
        tree = Counter({k: n for k, n in self.counts.items() if k[2].startswith("fairseq_tree/")})
        half = Counter({k: n for k, n in self.counts.items() if k[3]})
        return {
            "operators": sum(self.counts.values()),
            "by_phase": by(lambda k: k[0]),
            "by_operator": by(lambda k: f"{k[0]}: {k[1]}"),
            "by_caller": by(lambda k: f"{k[0]}: {k[2]}"),
            "tree_specific": {"operators": sum(tree.values()),
                              "by_caller": dict(sorted(_sum_by(
                                  tree, lambda k: f"{k[0]}: {k[2]}: {k[1]}").items()))},
            "in_half": {"operators": sum(half.values()),
                        "tree_specific": sum(n for k, n in half.items()
                                             if k[2].startswith("fairseq_tree/")),
                        "by_operator": by_half(half)},
            "accumulating_scatters": self.scatters,
            "tree_forward_host_reads": self.host_reads,
        }


def by_half(half: Counter) -> dict:
    return dict(sorted(_sum_by(half, lambda k: f"{k[0]}: {k[1]}").items(), key=lambda kv: -kv[1]))


def _sum_by(counts: Counter, key) -> Counter:
    total = Counter()
    for k, n in counts.items():
        total[key(k)] += n
    return total


def precision_context(precision: str, device: str):
    """What stands in, on the CPU, for what fairseq's trainer does only on a GPU (--amp)."""
    if precision == "amp" and device == "cpu":
        return torch.autocast("cpu", dtype=torch.float16)
    return contextlib.nullcontext()


def precision_flags(precision: str, device: str) -> str:
    flags = PRECISIONS[precision]
    if precision == "fp16" and device == "cpu":
        flags += " --fp16-no-flatten-grads"  # the flat master copy is made on a CUDA device
    return flags


def counted_update(setup, batch, precision: str, device: str) -> dict:
    """The account of one update of ``batch``, after an update on it that creates Adam's state
    (each update on fresh tensors, as fairseq-train's loader gives them)."""
    with precision_context(precision, device):
        setup.trainer.train_step([fresh(batch)])
        account = OperatorAccount()
        with torch.autograd.detect_anomaly(check_nan=False), account:
            log = setup.trainer.train_step([fresh(batch)])
    return {**account.summary(), "loss": float(log["loss"]) if log else None}


def kernel_times(setup, batch, updates: int) -> dict:
    """CUDA time per update of each operator (torch.profiler, ``updates`` updates), ms."""
    from torch.profiler import ProfilerActivity, profile

    batches = [setup.trainer._prepare_sample(fresh(batch))[0] for _ in range(updates)]
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as profiler:
        for b in batches:
            setup.trainer.train_step([b])
        torch.cuda.synchronize()
    rows = [e for e in profiler.key_averages() if e.self_device_time_total > 0]
    rows.sort(key=lambda e: -e.self_device_time_total)
    return {"by_operator_ms": {e.key: e.self_device_time_total / 1000 / updates for e in rows}}


def run(args, data_bin: str) -> dict:
    report = {"benchmark": "one training update, operator by operator, tree2seq vs transformer",
              "settings": {k: v for k, v in vars(args).items() if k != "json"},
              "machine": machine(args.device), "date": time.strftime("%Y-%m-%d"),
              "results": {}}
    for size in args.sizes:
        for precision in args.precisions:
            flags = " ".join([args.train_args, precision_flags(precision, args.device)])
            with_flags = argparse.Namespace(**{**vars(args), "train_args": flags})
            cell, ids = {}, None
            for name, arch in zip(MODELS, SIZES[size]):
                argv = train_argv(with_flags, name, data_bin, arch)
                setup = build_setup(name, argv)
                if ids is None:  # the tree model's batches; the Transformer reads the same ids
                    ids = chosen_batches(setup, args.batch + 1)[args.batch]
                batch = collate(setup, ids)
                cell[name] = {"fairseq_train_args": shlex.join(argv),
                              **counted_update(setup, batch, precision, args.device)}
                if args.kernel_times and args.device == "cuda":
                    cell[name]["cuda"] = kernel_times(setup, batch, args.profile_updates)
                del setup
            tree, plain = (cell[name]["operators"] for name in MODELS)
            cell["sentences"] = len(ids)
            cell["tree2seq/transformer"] = {"operators": tree / plain}
            report["results"][f"{size} {precision}"] = cell
            print(f"{size} {precision}: {tree} against {plain} operators ({tree / plain:.3f}x)",
                  flush=True)
    report["machine"]["load_average_after"] = load_average()
    return report


def printed(report) -> list:
    lines = [f"{'size and precision':<30} {'tree2seq':>9} {'transf.':>9} {'ratio':>7} "
             f"{'tree ops':>9} {'half scatters (tree)':>21} {'host reads':>11}"]
    for key, cell in report["results"].items():
        tree = cell["tree2seq"]
        half_scatters = sum(1 for s in tree["accumulating_scatters"]
                            if s["dtype"] in ("float16", "bfloat16")
                            and s["caller"].startswith("fairseq_tree/modules/"))
        lines.append(f"{key:<30} {tree['operators']:>9} {cell['transformer']['operators']:>9} "
                     f"{cell['tree2seq/transformer']['operators']:>6.3f}x "
                     f"{tree['tree_specific']['operators']:>9} {half_scatters:>21} "
                     f"{len(tree['tree_forward_host_reads']):>11}")
    return lines


# The tree path's index operators (hierarchical accumulation and embeddings), in the profiler's
# names; the Transformer calls some of them too (its loss's gather).
INDEX_KERNEL_OPERATORS = ("aten::gather", "aten::scatter_add_", "aten::scatter_add",
                          "aten::index_add_", "aten::index_add", "aten::index_put_")


def kernel_milliseconds(cuda: dict) -> tuple[float, float]:
    """The kernel time of one update over the aten operators (each kernel counted once, under the
    operator that launched it: the profiler's other rows, the kernels by name and the annotated
    ranges, hold the same time again), and that of the index operators among them."""
    rows = cuda["by_operator_ms"]
    return (sum(ms for name, ms in rows.items() if name.startswith("aten::")),
            sum(rows.get(name, 0.0) for name in INDEX_KERNEL_OPERATORS))


def kernel_time_table(report) -> list:
    """RESULTS' table of ``--kernel-times``: a size and precision a row, each model's CUDA kernel
    time of one update of the batch, the ratio, and the gathers' and scatters' share of it."""
    rows = []
    for key, cell in report["results"].items():
        if "cuda" not in cell["tree2seq"]:
            continue
        (tree, tree_index), (plain, plain_index) = (kernel_milliseconds(cell[name]["cuda"])
                                                    for name in MODELS)
        rows.append([key, cell["sentences"], f"{tree:.2f}", f"{plain:.2f}", f"{tree / plain:.3f}x",
                     f"{tree_index:.3f}", f"{plain_index:.3f}"])
    return markdown_table(
        ["size and precision", "sentences", "tree2seq kernel ms", "Transformer kernel ms", "ratio",
         "gather / scatter / index_add ms, tree2seq", "the same, Transformer"], rows)


def fenced_table(report) -> list:
    """RESULTS' table of ``report``: the printed one, as a code block."""
    return ["```", *printed(report), "```"]


def get_parser() -> argparse.ArgumentParser:
    parser = config_parser(__doc__.split("\n")[0])
    parser.add_argument("--sizes", nargs="+", choices=sorted(SIZES), default=["iwslt", "wmt"])
    parser.add_argument("--precisions", nargs="+", choices=list(PRECISIONS),
                        default=list(PRECISIONS))
    parser.add_argument("--batch", type=int, default=1,
                        help="which of the tree model's training batches (sorted by length)")
    parser.add_argument("--kernel-times", action="store_true",
                        help="on CUDA: torch.profiler's kernel time of each operator as well")
    parser.add_argument("--profile-updates", type=int, default=5)
    return parser


def main(argv=None):
    return run_benchmark(get_parser(), run, printed, argv)


if __name__ == "__main__":
    main()
