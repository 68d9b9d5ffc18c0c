"""Whole training updates, tree2seq against fairseq's Transformer on the same sentences: time per
update, peak memory, matrix-product FLOPs, and an operator profile.

    python -m bench.training                                  # data-bin built from tests/data/bible
    python -m bench.training --data data/bible-en-fr-sample/data-bin --json FILE     # quickstart
    python -m bench.training --data ... --archs tree2seq_iwslt_de_en transformer_iwslt_de_en
    python -m bench.training --data ... --profile             # top operators, tree vs plain

Both models are trained as fairseq-train trains them: the fairseq-train arguments of the
experiment config (``--config``, default the quickstart's ``bible-en-fr-sample``; made by
the runner, ``configs/runner``, so the batch, optimizer and dropout settings are the config's)
are parsed by fairseq's own parser, and fairseq's task, model, criterion and ``Trainer`` run
``train_step`` (forward, backward, Adam) on each batch. The first model reads the trees, the
second (``--tree-input leaves-only``, as the config's transformer model) the leaves of the same
sentences, in the same batches: --batches batches of fairseq's training batches (evenly spaced
over the length-sorted list, so every length is represented). With --archs the two models are
those architectures at their own sizes (the config's encoder-/decoder- settings are dropped).

Measured, on the same batches:
  ms/update   median over --rounds rounds of every batch, after one warm-up round; the two models
              alternate batch by batch (and which goes first), so load on the machine hits both;
              also the median ratio of the two updates of a batch that ran side by side
  peak MB     one update of the batch with the most tokens: what it allocates on top of the
              parameters and the optimizer's state, the last gradients freed first (PyTorch's
              memory timeline on the CPU, the peak counter on CUDA)
  GFLOP       matrix-product FLOPs of one update of every batch, in total and by operator
              (forward and backward; attention counted by its products: torch.utils.flop_counter
              with the math attention kernel)
  nodes/leaf  real nodes per real leaf of these batches, and the padded (B x M) / (B x N)
and the ratios tree2seq / transformer: the FLOP ratio is the arithmetic floor of the time ratio.
"""

import argparse
import contextlib
import json
import shlex
import statistics
import time
from pathlib import Path

import torch

from bench.lib.fairseq_training import (
    CLOCKS, MODELS, Setup, build_setup, chosen_batches, collate, config_parser, fresh,
    interleaved_times, run_benchmark, sizes, train_argv, update, update_flops,
)
from bench.lib.report import load_average, machine, markdown_table
from bench.lib.timing import cuda_peak_kept, peak_bytes


def largest(batches: list) -> int:
    """Index of the batch with the most source and target tokens (the peak-memory batch)."""
    def tokens(batch):
        net = batch["net_input"]
        return net["src_tokens"].numel() + net["prev_output_tokens"].numel()
    return max(range(len(batches)), key=lambda i: tokens(batches[i]))


def profile_table(setup: Setup, batches: list, device: str, rows: int):
    """torch.profiler over one update of each batch: (printed table, top operators)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as profiler:
        for batch in batches:
            update(setup, fresh(batch))
    averages = profiler.key_averages()
    key = "self_cuda_time_total" if device == "cuda" else "self_cpu_time_total"
    top = sorted(averages, key=lambda e: getattr(e, key), reverse=True)[:rows]
    operators = [{"name": e.key, "calls": e.count,
                  "self_ms": getattr(e, key) / 1000} for e in top]
    return averages.table(sort_by=key, row_limit=rows), operators


def timing(times: dict) -> dict:
    """Medians per model, their ratio, and the median of the ratios of the updates that ran side
    by side (the same batch in the same round), which load on the machine affects least."""
    tree, plain = times[MODELS[0]], times[MODELS[1]]
    return {"ms_per_update": {name: 1000 * statistics.median(t) for name, t in times.items()},
            "ratio_of_medians": statistics.median(tree) / statistics.median(plain),
            "median_pair_ratio": statistics.median(a / b for a, b in zip(tree, plain)),
            "updates_timed": len(tree)}


def measure(setups: dict, ids: list, args) -> dict:
    """Every measurement of both models on the batches ``ids``."""
    batches = {name: [collate(setup, batch) for batch in ids] for name, setup in setups.items()}
    times = timing(interleaved_times(setups, batches, args))
    peak = largest(batches[MODELS[0]])
    result = {"batches": sizes(batches[MODELS[0]]), "peak_memory_batch": peak}
    for name, setup in setups.items():
        largest_batch = fresh(batches[name][peak])
        # train_step frees the last update's gradients before making its own: counted in the
        # "before" of the CUDA counter they would hide this update's (0.07 MB on the H100)
        setup.trainer.zero_grad()
        result[name] = {
            "ms_per_update": times["ms_per_update"][name],
            "peak_mb": peak_bytes(lambda: update(setup, largest_batch), args.device) / 2**20,
            "gflop": {k: v / 1e9 for k, v in update_flops(setup, batches[name]).items()},
        }
    tree, plain = result[MODELS[0]], result[MODELS[1]]
    floor = tree["gflop"]["total"] / plain["gflop"]["total"]
    result["tree2seq/transformer"] = {
        "ms_per_update": times["ratio_of_medians"], "median_pair_ratio": times["median_pair_ratio"],
        "peak_mb": tree["peak_mb"] / plain["peak_mb"], "flops (floor)": floor,
        "time / floor": times["ratio_of_medians"] / floor}
    result["updates_timed"] = times["updates_timed"]
    if args.profile:
        result["profile"] = {}
        for name, setup in setups.items():
            table, top = profile_table(setup, batches[name], args.device, args.profile_rows)
            print(f"\n== profile: {name}, one update of each of {len(ids)} batches\n{table}",
                  flush=True)
            result["profile"][name] = top
    return result


def printed(report) -> list:
    """The summary printed after the run."""
    result, lines = report["results"], []
    b = result["batches"]
    lines.append(f"{len(report['batch_ids'])} batches, {b['sentences']} sentences, "
                 f"{b['leaves']} leaves + {b['nodes']} nodes ({b['nodes_per_leaf']:.2f} nodes "
                 f"per leaf; padded {b['padded_nodes_per_leaf']:.2f})")
    lines.append(f"{'model':<13} {'ms/update':>10} {'peak MB':>9} {'GFLOP':>9}")
    for name in MODELS:
        r = result[name]
        lines.append(f"{name:<13} {r['ms_per_update']:>10.1f} {r['peak_mb']:>9.1f} "
                     f"{r['gflop']['total']:>9.2f}")
    x = result["tree2seq/transformer"]
    lines.append(f"{'tree/plain':<13} {x['ms_per_update']:>9.3f}x {x['peak_mb']:>8.3f}x "
                 f"{x['flops (floor)']:>8.3f}x   time / floor {x['time / floor']:.3f}; median "
                 f"ratio of side-by-side updates {x['median_pair_ratio']:.3f}x "
                 f"({report['settings']['clock']} clock)")
    return lines


def updates_table(report) -> list:
    """RESULTS' table of a run: each model's ms per update, the ratio of the medians and the
    median ratio of side-by-side updates, peak MB, GFLOP, the floor and time / floor."""
    result, settings = report["results"], report["settings"]
    tree, plain, x = result[MODELS[0]], result[MODELS[1]], result["tree2seq/transformer"]
    config = settings["config"] + (f" ({' vs '.join(settings['archs'])})" if settings["archs"]
                                   else "")
    return markdown_table(
        ["config", "tree2seq ms", "Transformer ms", "ratio", "side-by-side ratio",
         "peak MB tree / plain", "GFLOP tree / plain", "floor (FLOP ratio)", "time / floor"],
        [[config, f"{tree['ms_per_update']:.1f}", f"{plain['ms_per_update']:.1f}",
          f"{x['ms_per_update']:.3f}x", f"{x['median_pair_ratio']:.3f}x",
          f"{tree['peak_mb']:.1f} / {plain['peak_mb']:.1f} = {x['peak_mb']:.3f}x",
          f"{tree['gflop']['total']:.1f} / {plain['gflop']['total']:.1f}",
          f"{x['flops (floor)']:.3f}x", f"{x['time / floor']:.3f}"]])


def one_process_table(report, own: str) -> list:
    """The report's ``one_process_check``: each model's ms per update with both models in one
    process, against its median in its own fairseq-train process (the report at ``own``, a path
    from the repository root, of bench/train_end_to_end.py)."""
    check = report["one_process_check"]["ms_per_update"]
    alone = json.loads((Path(__file__).resolve().parents[1] / own).read_text(encoding="utf-8"))
    rows = []
    for name, label in zip(MODELS, ("tree2seq", "Transformer")):
        own_ms = 1000 * alone["median"][name]["seconds_per_update"]
        rows.append([label, " / ".join(f"{ms:.1f}" for ms in check[name]), f"{own_ms:.1f}",
                     f"{min(check[name]) / own_ms:.3f}-{max(check[name]) / own_ms:.3f}x"])
    return markdown_table(["model", "one process, ms/update (3 passes)",
                           "own fairseq-train process, median ms/update", "one process / own"],
                          rows)


def get_parser() -> argparse.ArgumentParser:
    parser = config_parser(__doc__.split("\n")[0])
    parser.add_argument("--archs", nargs=2, metavar=("TREE2SEQ", "TRANSFORMER"),
                        help="these architectures at their own sizes instead of the config's")
    parser.add_argument("--batches", type=int, default=10, help="training batches measured")
    parser.add_argument("--rounds", type=int, default=3, help="timed passes over the batches")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="wall time, or the process's CPU time (steadier on a shared "
                        "machine; on a GPU the CPU time is not the update's time)")
    parser.add_argument("--profile", action="store_true",
                        help="also print (and report) the top operators of each model")
    parser.add_argument("--profile-rows", type=int, default=25)
    parser.add_argument("--max-tokens-sweep", type=int, nargs="+", metavar="N",
                        help="instead of timing: the peak CUDA memory of an update of the "
                        "largest batch at each --max-tokens N, each model alone, up to the "
                        "first that does not fit")
    return parser


def run(args, data_bin: str) -> dict:
    archs = args.archs or (None, None)
    argvs = {name: train_argv(args, name, data_bin, arch) for name, arch in zip(MODELS, archs)}
    setups = {name: build_setup(name, argv) for name, argv in argvs.items()}
    ids = chosen_batches(setups[MODELS[0]], args.batches)
    report = {
        "benchmark": "training updates (forward, backward, optimizer), tree2seq vs transformer",
        "settings": {k: v for k, v in vars(args).items() if k != "json"},
        "fairseq_train_args": {name: shlex.join(argv) for name, argv in argvs.items()},
        "parameters": {name: sum(p.numel() for p in s.trainer.model.parameters())
                       for name, s in setups.items()},
        "machine": machine(args.device), "date": time.strftime("%Y-%m-%d"),
        "batch_ids": ids,
    }
    report["results"] = measure(setups, ids, args)
    report["machine"]["load_average_after"] = load_average()
    return report


def largest_batch(setup: Setup, max_tokens: int) -> list:
    """The batch (sentence ids) of fairseq's training batches at ``max_tokens`` with the most
    padded tokens (sentences x the longest, as --max-tokens bounds them)."""
    setup.trainer.cfg.dataset.max_tokens = max_tokens
    epoch_itr = setup.trainer.get_train_iterator(epoch=1, load_dataset=False,
                                                 disable_iterator_cache=True)
    dataset = setup.dataset
    return max((ids.tolist() for ids in epoch_itr.frozen_batches),
               key=lambda ids: len(ids) * max(dataset.num_tokens(i) for i in ids))


def is_out_of_memory(error: Exception) -> bool:
    return isinstance(error, torch.cuda.OutOfMemoryError) or "out of memory" in str(error)


def peak_at(setup: Setup, max_tokens: int) -> dict:
    """Peak CUDA memory (torch.cuda.max_memory_allocated, GiB) of an update of the largest batch
    at ``max_tokens``, after a first update of it (Adam's state and the allocator's cache made),
    or its out-of-memory error. On the CPU (a dry run of the plumbing) no memory is measured."""
    ids = largest_batch(setup, max_tokens)
    batch = collate(setup, ids)
    cuda = setup.trainer.cuda
    row = {"max_tokens": max_tokens, "sentences": len(ids),
           "padded_tokens": len(ids) * int(max(setup.dataset.num_tokens(i) for i in ids))}
    try:
        setup.trainer.train_step([fresh(batch)], raise_oom=True)
        if not cuda:
            setup.trainer.train_step([fresh(batch)], raise_oom=True)
            return {**row, "fits": True, "peak_gib": None}
        torch.cuda.synchronize()
        with cuda_peak_kept() as peak:
            setup.trainer.train_step([fresh(batch)], raise_oom=True)
            torch.cuda.synchronize()
            return {**row, "fits": True, "peak_gib": peak() / 2**30}
    except RuntimeError as error:
        if not is_out_of_memory(error):
            raise
        return {**row, "fits": False, "error": str(error).splitlines()[0][:300]}
    finally:
        setup.trainer.zero_grad()
        if cuda:
            torch.cuda.empty_cache()


def sweep(args, data_bin: str) -> dict:
    """The largest --max-tokens of ``args.max_tokens_sweep`` that one update of each model fits
    in, on CUDA: each model alone on the card (built, swept upwards until the first size that
    does not fit, freed), its peak memory at every size (on the CPU, the plumbing only)."""
    archs = args.archs or (None, None)
    report = {"benchmark": "the largest --max-tokens an update fits in, and its peak memory",
              "settings": {k: v for k, v in vars(args).items() if k != "json"},
              "machine": machine(args.device), "date": time.strftime("%Y-%m-%d"),
              "card_gib": torch.cuda.get_device_properties(0).total_memory / 2**30
              if args.device == "cuda" else None}
    for name, arch in zip(MODELS, archs):
        argv = train_argv(args, name, data_bin, arch)
        setup, rows = build_setup(name, argv), []
        for max_tokens in sorted(args.max_tokens_sweep):
            rows.append(peak_at(setup, max_tokens))
            print(f"{name} --max-tokens {max_tokens}: {rows[-1]}", flush=True)
            if not rows[-1]["fits"]:
                break
        fitting = [row["max_tokens"] for row in rows if row["fits"]]
        report[name] = {"fairseq_train_args": shlex.join(argv), "sizes": rows,
                        "largest_fitting": max(fitting, default=None),
                        "all_fit": all(row["fits"] for row in rows)}
        del setup
        if args.device == "cuda":
            torch.cuda.empty_cache()
    report["machine"]["load_average_after"] = load_average()
    return report


def sweep_lines(report) -> list:
    lines = [f"{'model':<13} {'max-tokens':>10} {'sentences':>9} {'peak GiB':>9}"]
    for name in MODELS:
        for row in report[name]["sizes"]:
            peak = "OOM" if not row["fits"] else "-" if row["peak_gib"] is None else \
                f"{row['peak_gib']:.2f}"
            lines.append(f"{name:<13} {row['max_tokens']:>10} {row['sentences']:>9} {peak:>9}")
        largest = report[name]["largest_fitting"]
        more = " (every size tried fits)" if report[name]["all_fit"] else ""
        lines.append(f"{name:<13} largest that fits: {largest}{more}")
    return lines


def main(argv=None):
    args = get_parser().parse_args(argv)
    if args.max_tokens_sweep:
        return run_benchmark(get_parser(), sweep, sweep_lines, argv)
    return run_benchmark(get_parser(), run, printed, argv)


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        main()
