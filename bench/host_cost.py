"""The host work of a training step: tree2seq against fairseq's Transformer at a width where the
arithmetic vanishes, so that what is left is what a GPU's host pays per batch (Python, dispatch,
autograd), whatever the card.

    python -m bench.host_cost                                   # data-bin built from tests/data/bible
    python -m bench.host_cost --data data/bible-en-fr-sample/data-bin \\
        --json bench/results/host-cost-cpu.json

Both models have the IWSLT layer counts (``tree2seq_iwslt_de_en`` against
``transformer_iwslt_de_en``: 6 + 6 layers, 4 heads) at width ``--width`` (default 16: FFN twice
that, head dimension 4), and are built, batched and stepped as fairseq-train builds them
(``bench/training.py``: the quickstart config's optimizer, criterion and dropout; ``--cpu``). They
train on the same ``--batches`` small batches of real trees (``--sentences`` sentences each,
taken evenly over the training set sorted by length), each update on fresh tensors, in one torch
thread. Measured:

  ms / step        fairseq's whole ``Trainer.train_step`` (forward, backward, clipping, Adam):
                   median over ``--rounds`` rounds of every batch after ``--warmup-rounds``, the
                   models alternating batch by batch; the ratio of the medians, and the median
                   ratio of the side-by-side steps (the same batch, one model after the other)
  forward + backward   the same of the model's forward, the loss and its backward alone
  operators / step     aten operators dispatched (views left out), the step's phases apart
  autograd nodes       nodes of the step's backward graph

``--tree-args`` gives tree2seq flags of its own (an ablation's cost, say).

The collater's work is not in the step: fairseq-train's loader runs it (in a DataLoader worker
with ``--num-workers`` above 0).
"""

import argparse
import contextlib
import shlex
import statistics
import time
from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from bench.lib.report import load_average, machine, markdown_table, other_reports
from bench.lib.fairseq_training import (
    MODELS, build_setup, chosen_batches, collate, config_parser, fresh, run_benchmark, train_argv,
)

ARCHS = ("tree2seq_iwslt_de_en", "transformer_iwslt_de_en")


class OperatorCount(TorchDispatchMode):
    """The aten operators dispatched while on (views left out: they launch nothing), by phase:
    forward (loss included), backward (under an autograd node), then the optimizer."""

    def __init__(self):
        super().__init__()
        self.phases = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if not func.is_view:
            if torch._C._current_autograd_node() is not None:
                self.phases["backward"] += 1
            else:
                self.phases["optimizer" if self.phases["backward"] else "forward"] += 1
        return out


def graph_nodes(root) -> int:
    """The autograd nodes reachable from ``root`` (a loss's ``grad_fn``)."""
    seen, stack = set(), [root]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return len(seen)


@contextlib.contextmanager
def counted_backward(counts: list):
    """``Tensor.backward`` appending the size of the graph it runs to ``counts``."""
    backward = torch.Tensor.backward

    def counting(self, *args, **kwargs):
        counts.append(graph_nodes(self.grad_fn))
        return backward(self, *args, **kwargs)

    torch.Tensor.backward = counting
    try:
        yield
    finally:
        torch.Tensor.backward = backward


def train_step(setup, batch):
    setup.trainer.train_step([fresh(batch)])


def forward_backward(setup, batch):
    """The model's forward, the loss and its backward, as the task's ``train_step`` runs them,
    without the trainer around them (its sample preparation, clipping, optimizer)."""
    trainer = setup.trainer
    sample, _ = trainer._prepare_sample(fresh(batch))
    trainer.model.train()
    loss, _, _ = trainer.criterion(trainer.model, sample)
    loss.backward()
    trainer.model.zero_grad(set_to_none=True)


STEPS = {"train_step": train_step, "forward_backward": forward_backward}


def timed(step, setup, batch) -> float:
    start = time.perf_counter()
    step(setup, batch)
    return time.perf_counter() - start


def step_times(setups: dict, batches: dict, rounds: int, warmup: int = 1) -> dict:
    """Seconds of every step of each kind, per model: ``warmup`` untimed rounds, then ``rounds``
    rounds in which the models alternate batch by batch, each going first in turn."""
    times = {kind: {name: [] for name in setups} for kind in STEPS}
    for round_ in range(rounds + warmup):
        for i in range(len(batches[MODELS[0]])):
            order = MODELS if (round_ + i) % 2 == 0 else MODELS[::-1]
            for kind, step in STEPS.items():
                for name in order:
                    seconds = timed(step, setups[name], batches[name][i])
                    if round_ >= warmup:
                        times[kind][name].append(seconds)
    return times


def counts(setup, batches: list) -> dict:
    """Operators (by phase) and autograd nodes of a training step, the mean over ``batches``."""
    phases, nodes = Counter(), []
    for batch in batches:
        account = OperatorCount()
        with counted_backward(nodes), account:
            train_step(setup, batch)
        phases.update(account.phases)
    per_step = {phase: n / len(batches) for phase, n in phases.items()}
    return {"operators": sum(per_step.values()), "operators_by_phase": per_step,
            "autograd_nodes": sum(nodes) / len(batches)}


def run(args, data_bin: str) -> dict:
    width = args.width
    sizes = (f"--encoder-embed-dim {width} --decoder-embed-dim {width} "
             f"--encoder-ffn-embed-dim {2 * width} --decoder-ffn-embed-dim {2 * width} "
             f"--batch-size {args.sentences} --max-tokens 100000 ")
    flags = argparse.Namespace(**{**vars(args), "train_args": sizes + args.train_args,
                                  "device": "cpu"})
    argvs = {name: train_argv(flags, name, data_bin, arch) for name, arch in zip(MODELS, ARCHS)}
    argvs[MODELS[0]] += shlex.split(args.tree_args)
    setups = {name: build_setup(name, argv) for name, argv in argvs.items()}
    ids = chosen_batches(setups[MODELS[0]], args.batches)
    batches = {name: [collate(setup, b) for b in ids] for name, setup in setups.items()}
    times = step_times(setups, batches, args.rounds, args.warmup_rounds)
    results = {}
    for name, setup in setups.items():
        results[name] = {f"{kind}_ms": 1000 * statistics.median(times[kind][name])
                         for kind in STEPS}
        results[name].update(counts(setup, batches[name]))
    tree, plain = (results[name] for name in MODELS)
    results["tree2seq/transformer"] = {
        key: tree[key] / plain[key]
        for key in ("train_step_ms", "forward_backward_ms", "operators", "autograd_nodes")}
    # the same batch in the same round, one model right after the other: what load on the
    # machine changes least
    results["tree2seq/transformer"]["median_pair_ratio"] = {
        kind: statistics.median(a / b for a, b in zip(*(times[kind][name] for name in MODELS)))
        for kind in STEPS}
    return {"benchmark": "host work of a training step at a width where arithmetic vanishes",
            "settings": {k: v for k, v in vars(args).items() if k != "json"},
            "fairseq_train_args": {name: shlex.join(argv) for name, argv in argvs.items()},
            "parameters": {name: sum(p.numel() for p in s.trainer.model.parameters())
                           for name, s in setups.items()},
            "machine": {**machine("cpu"), "load_average_after": load_average()},
            "date": time.strftime("%Y-%m-%d"), "batch_ids": ids,
            "sentences": sum(len(b) for b in ids),
            "steps_timed": len(times["train_step"][MODELS[0]]), "results": results}


def host_cost_table(report: dict) -> list:
    """A model a row: ms a training step and a forward + backward, operators a step (forward /
    backward / optimizer) and autograd nodes; then tree2seq over the Transformer."""
    results, rows = report["results"], []
    for name in MODELS:
        r = results[name]
        phases = " / ".join(f"{r['operators_by_phase'].get(p, 0):.0f}"
                            for p in ("forward", "backward", "optimizer"))
        rows.append([name, f"{r['train_step_ms']:.2f}", f"{r['forward_backward_ms']:.2f}",
                     f"{r['operators']:.0f} ({phases})", f"{r['autograd_nodes']:.0f}"])
    x = results["tree2seq/transformer"]
    rows.append(["tree2seq / Transformer", f"{x['train_step_ms']:.3f}x",
                 f"{x['forward_backward_ms']:.3f}x", f"{x['operators']:.3f}x",
                 f"{x['autograd_nodes']:.3f}x"])
    s = report["settings"]
    return markdown_table(
        ["model", "ms / training step", "ms / forward + backward",
         "operators / step (forward / backward / optimizer)", "autograd nodes / step"], rows) + [
        "", "Median ratio of side-by-side steps (the same batch, one model after the other): "
            + ", ".join(f"{kind} {ratio:.3f}x" for kind, ratio in x["median_pair_ratio"].items())
            + ".",
        "", f"Width {s['width']}, {s['batches']} batches of {s['sentences']} sentence(s), "
            f"{('tree2seq with ' + s['tree_args'] + ', ') if s.get('tree_args') else ''}"
            f"{report['steps_timed']} steps timed a model; load average "
            f"{report['machine']['load_average'][0]:.2f}."]


def host_cost_history_table(report: dict, earlier: str = "", labels: str = "") -> list:
    """tree2seq over the Transformer in this report and in ``earlier`` ones (comma-separated
    paths, oldest first), a row each, labelled by ``labels`` (comma-separated, the report's
    last): the ratios of the medians, the median side-by-side ratios, and tree2seq's operators
    and autograd nodes a step."""
    reports = other_reports(earlier) + [report]
    names = labels.split(",") if labels else [str(i) for i in range(len(reports))]
    if len(names) != len(reports):
        raise ValueError(f"{len(names)} labels for {len(reports)} reports")
    rows = []
    for name, each in zip(names, reports):
        x, tree = each["results"]["tree2seq/transformer"], each["results"][MODELS[0]]
        pair = x["median_pair_ratio"]
        rows.append([name, f"{x['train_step_ms']:.3f}x", f"{pair['train_step']:.3f}x",
                     f"{x['forward_backward_ms']:.3f}x", f"{pair['forward_backward']:.3f}x",
                     f"{tree['operators']:.0f} ({x['operators']:.3f}x)",
                     f"{tree['autograd_nodes']:.0f} ({x['autograd_nodes']:.3f}x)"])
    return markdown_table(
        ["code", "training step", "side by side", "forward + backward", "side by side",
         "tree2seq operators / step", "tree2seq autograd nodes / step"], rows)


def get_parser() -> argparse.ArgumentParser:
    parser = config_parser(__doc__.split("\n")[0])
    parser.add_argument("--width", type=int, default=16, help="d of both models (FFN 2d)")
    parser.add_argument("--sentences", type=int, default=1, help="sentences a batch")
    parser.add_argument("--batches", type=int, default=20, help="batches measured")
    parser.add_argument("--rounds", type=int, default=5, help="timed passes over the batches")
    parser.add_argument("--warmup-rounds", type=int, default=1,
                        help="untimed passes over the batches first")
    parser.add_argument("--threads", type=int, default=1, help="torch's threads")
    parser.add_argument("--tree-args", default="",
                        help="more fairseq-train flags for tree2seq alone, one string "
                        "(e.g. --no-hier-embed)")
    return parser


def main(argv=None):
    args = get_parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    return run_benchmark(get_parser(), run, host_cost_table, argv)


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        main()
