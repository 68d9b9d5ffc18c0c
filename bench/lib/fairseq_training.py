"""Both models of an experiment config as fairseq-train builds them, for the benchmarks that
time or count their updates (bench/training.py, host_cost, operator_account, half_precision,
train_end_to_end): the config's fairseq-train arguments made by the runner
(``configs/runner``), parsed by fairseq's own parser; fairseq's task, model, criterion and
``Trainer``; fairseq's training batches, collated as each model's task collates them; one
update timed, or its matrix-product FLOPs counted."""

import argparse
import dataclasses
import shlex
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from fairseq import options, tasks, utils
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.trainer import Trainer
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from bench.lib.data_bins import build_data_bin, data_bin_parser
from bench.lib.report import end_report
from configs.runner.config import load_experiment
from configs.runner.experiment import train_command

ROOT = Path(__file__).resolve().parents[2]


MODELS = ("tree2seq", "transformer")  # read the trees / the leaves of the same trees


@dataclass
class Setup:
    """One model ready to train: its fairseq-train arguments, task and trainer."""

    name: str
    argv: list
    task: object
    trainer: Trainer

    @property
    def dataset(self):
        return self.task.dataset(self.task.cfg.train_subset)


def train_argv(args, model: str, data_bin: str, arch) -> list:
    """fairseq-train's arguments (program name left out) for ``model`` of the config; with
    ``arch``, that architecture at its own sizes."""
    exp = load_experiment(Path(args.config_dir), args.config, model)
    if arch is not None:
        sizes = ("encoder-", "decoder-")
        train = {k: v for k, v in exp.train.items() if not k.startswith(sizes)}
        exp = dataclasses.replace(exp, train={**train, "arch": arch})
    extras = ["--no-save", "--disable-validation", *shlex.split(args.train_args)]
    if args.device == "cpu":
        extras.append("--cpu")
    command, _ = train_command(exp, Path(data_bin), Path(tempfile.gettempdir()), 0, extras)
    return command[1:]


def build_setup(name: str, argv: list) -> Setup:
    """Task, model, criterion and Trainer as fairseq-train builds them, training set loaded."""
    parser = options.get_training_parser()
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(parser, argv))
    utils.set_torch_seed(cfg.common.seed)
    task = tasks.setup_task(cfg.task)
    model = task.build_model(cfg.model)
    trainer = Trainer(cfg, task, model, task.build_criterion(cfg.criterion))
    task.load_dataset(cfg.dataset.train_subset, epoch=1)
    return Setup(name, argv, task, trainer)


def chosen_batches(setup: Setup, count: int) -> list:
    """``count`` of fairseq's training batches (sentence ids), evenly spaced over the list
    fairseq builds (sorted by length), the config's batch size and token ceiling applied."""
    epoch_itr = setup.trainer.get_train_iterator(epoch=1, load_dataset=False)
    batches = list(epoch_itr.frozen_batches)
    step = len(batches) / min(count, len(batches))
    return [batches[int(i * step)].tolist() for i in range(min(count, len(batches)))]


def collate(setup: Setup, ids: list) -> dict:
    """One batch as this model's task collates it (the trainer moves it to the device)."""
    return setup.dataset.collater([setup.dataset[i] for i in ids])


def sizes(batches: list) -> dict:
    """Real and padded leaves and nodes of the tree batches."""
    leaves = nodes = padded_leaves = padded_nodes = 0
    for batch in batches:
        net = batch["net_input"]
        spans = net["src_node_spans"]
        leaves += int(net["src_lengths"].sum())
        nodes += int((spans[..., 0] < spans[..., 1]).sum())
        padded_leaves += net["src_tokens"].numel()
        padded_nodes += spans.shape[0] * spans.shape[1]
    return {"sentences": sum(len(b["id"]) for b in batches), "leaves": leaves, "nodes": nodes,
            "nodes_per_leaf": nodes / leaves, "padded_nodes_per_leaf": padded_nodes / padded_leaves,
            "target_tokens": sum(int(b["ntokens"]) for b in batches)}


def fresh(batch: dict) -> dict:
    """A copy of the batch's tensors. fairseq-train's loader gives every update new tensors, and
    tree2seq caches a batch's accumulation plan by its spans tensor: updating on the same tensors
    again would skip the plan's construction, which each update of a real run pays."""
    return utils.apply_to_sample(torch.clone, batch)


def update(setup: Setup, batch: dict):
    setup.trainer.train_step([batch])


CLOCKS = {"wall": time.perf_counter, "process": time.process_time}


def timed_update(setup: Setup, batch: dict, args) -> float:
    clock = CLOCKS[args.clock]
    batch = fresh(batch)
    if args.device == "cuda":
        torch.cuda.synchronize()
    start = clock()
    update(setup, batch)
    if args.device == "cuda":
        torch.cuda.synchronize()
    return clock() - start


def interleaved_times(setups: dict, batches: dict, args) -> dict:
    """Seconds of every update, per model: one warm-up round, then ``args.rounds`` rounds in
    which the models alternate batch by batch, each going first in turn."""
    times = {name: [] for name in setups}
    for round_ in range(args.rounds + 1):
        for i in range(len(batches[MODELS[0]])):
            order = MODELS if (round_ + i) % 2 == 0 else MODELS[::-1]
            for name in order:
                seconds = timed_update(setups[name], batches[name][i], args)
                if round_ > 0:
                    times[name].append(seconds)
    return times


def update_flops(setup: Setup, batches: list) -> dict:
    """Matrix-product FLOPs of one update of each batch, in total and by operator (attention
    through the math kernel, so that its products are counted wherever it runs)."""
    counter = FlopCounterMode(display=False)
    with counter, sdpa_kernel(SDPBackend.MATH):
        for batch in batches:
            update(setup, fresh(batch))
    by_operator = {str(op).split(".")[-1]: n for op, n in counter.get_flop_counts()["Global"].items()}
    return {"total": counter.get_total_flops(), **by_operator}


def config_parser(description: str) -> argparse.ArgumentParser:
    """The options of a benchmark that builds both models from an experiment config: the
    data-bin (``data_bin_parser``), ``--config``, ``--config-dir``, ``--train-args``, ``--device``
    and ``--json``."""
    parser = data_bin_parser(description)
    parser.add_argument("--config", default="bible-en-fr-sample",
                        help="experiment config whose tree2seq and transformer models are trained")
    parser.add_argument("--config-dir", default=str(ROOT / "configs"))
    parser.add_argument("--train-args", default="",
                        help="more fairseq-train flags for both models, one string (e.g. --bf16)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--json", metavar="FILE", help="also write the results here")
    return parser


def run_benchmark(parser, run_on, summary, argv=None) -> dict:
    """Parse ``argv``; ``run_on(args, data_bin)`` on --data, or on the Bible sample binarized in
    a temporary folder; print ``summary(report)``'s lines and write the JSON."""
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        report = run_on(args, args.data or build_data_bin(work, args.bpe_symbols))
    return end_report(report, summary(report), args.json)
