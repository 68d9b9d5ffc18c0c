"""The time per update a user sees: the real training command of both models (the quickstart's
fairseq-tree-train, with fairseq-train's own loop, loader and logging), read from fairseq's own JSON
log, beside the arithmetic floor computed on the batches those updates trained on.

    python -m bench.train_end_to_end --data data/bible-en-fr-sample/data-bin --updates 400 \\
        --repeats 2 --json bench/results/train-end-to-end-cpu.json
    python -m bench.train_end_to_end ... --profile-dir runs/profiles     # also cProfile each run
    python -m bench.train_end_to_end ... --torch-profile runs/operators  # operators vs the floor
    python -m bench.train_end_to_end --floor-of GPU-REPORT.json   # the floor of a --no-floor run

Each run is the experiment config's command (``--config``, default the quickstart's
``bible-en-fr-sample``: its batches, optimizer, dropout and seed) with validation and saving off,
``--log-format json --log-interval --log-every`` and ``--max-update --updates``. The models
alternate, ``--repeats`` times each, so load on the machine hits both. A run's time per update is
fairseq's ``wall`` clock between the first log line at or after update ``--warmup`` and the last
one, over the updates between them: everything a user waits for (loading the next batch,
collating trees, epoch boundaries, logging) is inside it. ``train_wall``, the time fairseq spends
inside its train steps, is reported beside it, so the rest (loader, epoch work, logging) shows.
fairseq logs both clocks in whole seconds; each run goes through bench/lib/measured_train.py, whose
end time of every update replaces the wall clock (and which gives the peak CUDA memory), and
fairseq's ``wpb`` gives target tokens a second.

The floor: the matrix-product FLOPs of one update of every batch those updates trained on (each
model's batches rebuilt by its own iterator with the run's seed, checked against the mean batch
size of every interval of fairseq's log; each distinct batch counted once and weighted by how
often it was trained on), tree2seq's total over the Transformer's, as bench/training.py counts
them. Both datasets order sentences by their leaves, so the two models train on the same batches
(``same_batches``) where ``--batch-size`` binds, as in the quickstart's config; where
``--max-tokens`` binds, tree2seq's batches hold fewer sentences (a tree counts its leaves and
nodes), and ``per_target_token`` compares time and FLOPs per target token. ``ratio / floor`` is
the part of the time ratio that the arithmetic does not explain (the same either way).
``--floor-of`` counts the floor of a report made with ``--no-floor`` on another machine (a GPU
lent for minutes), on its commands without precision flags.

``--token-matched`` also times fairseq's Transformer on a copy of the data whose sources are
N + M tokens long (each sentence's leaves, cycled to as many more as it has nodes): as many
encoder positions as tree2seq reads, through fairseq's own layers only. tree2seq's time over
its time, beside their FLOP ratio, is what tree2seq costs beyond the length of its input.

``--torch-profile`` runs each model once more under torch.profiler (bench/lib/profiled_train.py,
updates ``--warmup`` to ``--updates``) and splits what the floor does not explain by operator:
an operator's excess is its tree2seq milliseconds per update less the floor times its Transformer
milliseconds; the excesses add up to tree2seq's profiled time less the floor times the
Transformer's.
"""

import argparse
import collections
import contextlib
import json
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from bench.lib.data_bins import data_bin_parser
from bench.lib.report import end_report, load_average, machine, markdown_table, other_reports
from bench.lib.measured_train import ENDS, PEAK
from bench.lib.fairseq_training import MODELS, build_setup, collate, run_benchmark, update_flops

ROOT = Path(__file__).resolve().parents[1]
from configs.runner.config import load_experiment
from configs.runner.experiment import train_command
from configs.runner.fairseq_logs import progress_records
from configs.runner.processes import run_command
from fairseq_tree.data.tree_files import LABELS, tree_file
from fairseq_tree.errors import CliError

from fairseq.data import Dictionary, data_utils, indexed_dataset

# fairseq's Transformer on sources of N + M tokens (--token-matched): tree2seq's encoder length
TOKEN_MATCHED = "transformer_n_plus_m"


def command(args, model: str, data_bin: str, save_dir: str) -> list:
    """The config's training command for ``model``, timed as a user runs it but with nothing
    saved or validated, logging fairseq's JSON every ``--log-every`` updates."""
    exp = load_experiment(Path(args.config_dir), args.config, model)
    extras = ["--no-save", "--disable-validation", "--log-format", "json", "--log-interval",
              str(args.log_every), "--max-update", str(args.updates), *shlex.split(args.train_args)]
    if args.device == "cpu":
        extras.append("--cpu")
    cmd, _ = train_command(exp, Path(data_bin), Path(save_dir), 0, extras)
    return cmd


def token_matched_data_bin(data_bin: Path, out: Path, source: str, target: str) -> Path:
    """A copy of the tree data-bin in which every source sentence of N leaves and M nodes is
    N + M tokens long: its leaves, then its leaves again, cycled, up to M more, then </s>.
    Targets and dictionaries are the same files. fairseq's Transformer trained on it reads as
    many encoder positions as tree2seq does, through fairseq's own layers only."""
    out.mkdir(parents=True, exist_ok=True)
    pair = f"{source}-{target}"
    dictionary = Dictionary.load(str(data_bin / f"dict.{source}.txt"))
    for name in (f"dict.{source}.txt", f"dict.{target}.txt"):
        (out / name).symlink_to((data_bin / name).resolve())
    for index in sorted(data_bin.glob(f"*.{pair}.{source}.idx")):
        prefix = str(index)[:-len(".idx")]
        leaves = data_utils.load_indexed_dataset(prefix, None, "mmap")
        labels = data_utils.load_indexed_dataset(tree_file(prefix, LABELS), None, "mmap")
        if labels is None:
            raise SystemExit(f"train_end_to_end.py: error: {prefix}: not a tree data-bin "
                             f"(no {tree_file(prefix, LABELS)}.idx)")
        split_prefix = out / Path(prefix).name
        builder = indexed_dataset.make_builder(f"{split_prefix}.bin", "mmap",
                                               vocab_size=len(dictionary))
        for i in range(len(leaves)):
            words = leaves[i][:-1]  # without </s>
            extra = words.repeat(len(labels[i]) // max(len(words), 1) + 1)[:len(labels[i])]
            builder.add_item(torch.cat([words, extra, leaves[i][-1:]]))
        builder.finalize(f"{split_prefix}.idx")
        for suffix in (".bin", ".idx"):
            name = Path(prefix).name[:-len(source)] + target + suffix
            (out / name).symlink_to((data_bin / name).resolve())
    return out


def log_records(text: str) -> list[dict]:
    """fairseq's JSON log lines of the training loop (train_inner and the epochs' train)."""
    return progress_records(text, ["train_inner", "train"])


def time_per_update(records: list[dict], warmup: int, ends: dict | None = None) -> dict:
    """Seconds per update between the first train_inner line at or after update ``warmup`` and
    the last, by fairseq's wall clock and by its train_wall (time inside the train steps); with
    ``ends`` (each update's end, bench/lib/measured_train.py), the wall time from those ends, as
    fairseq's whole-second clock is too coarse for a GPU's few seconds."""
    inner = [r for r in records if r["kind"] == "train_inner"]
    timed = [r for r in inner if int(r["num_updates"]) >= warmup]
    if len(timed) < 2:
        raise SystemExit(f"train_end_to_end.py: error: fewer than two log lines after update "
                         f"{warmup} (raise --updates or lower --warmup / --log-every)")
    first, last = timed[0], timed[-1]
    updates = int(last["num_updates"]) - int(first["num_updates"])
    # train_wall is logged per interval (reset at each line); wall is cumulative
    inside = sum(float(r["train_wall"]) for r in timed[1:])
    # wpb: the interval's mean target tokens per update
    targets = sum(float(r["wpb"]) * (int(r["num_updates"]) - int(before["num_updates"]))
                  for before, r in zip(timed, timed[1:]))
    seconds = float(last["wall"]) - float(first["wall"])
    if ends:
        seconds = ends[int(last["num_updates"])] - ends[int(first["num_updates"])]
    return {"from_update": int(first["num_updates"]), "to_update": int(last["num_updates"]),
            "seconds_per_update": seconds / updates,
            "train_wall_per_update": inside / updates,
            "target_tokens_per_second": targets / seconds if seconds else None}


def first_epoch_end(records: list[dict]) -> int | None:
    """The update at which the first epoch ended (its ``train`` line), or None if it did not."""
    return next((int(r["num_updates"]) for r in records
                 if r["kind"] == "train" and int(r["epoch"]) == 1), None)


def log_intervals(records: list[dict], ends: dict | None = None) -> list[dict]:
    """fairseq's train_inner lines as intervals: the updates after the line before up to this
    one, their seconds (from ``ends`` where given, else the interval's updates over fairseq's
    ``ups``, which is logged per interval with two decimals where ``wall`` has whole seconds),
    target tokens (``wpb``) and sentences (``bsz``). train_inner's meters are reset at each line,
    not at an epoch's end: an interval may hold the end of one epoch and the start of the next."""
    intervals, before = [], 0
    for r in records:
        if r["kind"] != "train_inner":
            continue
        update = int(r["num_updates"])
        count = update - before
        seconds = (ends[update] - ends[before] if ends and before in ends and update in ends
                   else count / float(r["ups"]))
        intervals.append({"from": before, "to": update, "seconds": seconds,
                          "target_tokens": float(r["wpb"]) * count,
                          "sentences": float(r["bsz"]) * count})
        before = update
    return intervals


def phase_times(records: list[dict], warmup: int, ends: dict | None = None) -> dict:
    """The cost of a run in two parts: the first epoch from update ``warmup`` (warm-up: data
    loading, caches, on a GPU per-shape set-up) and every update after the first epoch, each
    over the log intervals wholly inside it (``log_intervals``): ms an update, target tokens a
    second and sentences an update. Without a second epoch, ``after_first_epoch`` is None."""
    end = first_epoch_end(records)
    intervals = log_intervals(records, ends)
    phases = {"first_epoch": [i for i in intervals
                              if i["from"] >= warmup and (end is None or i["to"] <= end)],
              "after_first_epoch": [i for i in intervals if end is not None and i["from"] >= end]}
    result = {"first_epoch_ends_at": end}
    for name, part in phases.items():
        seconds, updates = sum(i["seconds"] for i in part), sum(i["to"] - i["from"] for i in part)
        result[name] = None if not updates else {
            "from_update": part[0]["from"], "to_update": part[-1]["to"],
            "ms_per_update": 1000 * seconds / updates,
            "target_tokens_per_second": sum(i["target_tokens"] for i in part) / seconds,
            "sentences_per_update": sum(i["sentences"] for i in part) / updates}
    return result


def run_once(cmd: list, profile: Path | None) -> tuple[list[dict], float]:
    """One training run: fairseq's log records, and its whole wall time (start-up included)."""
    records, seconds, _, _ = run_measured(cmd, profile)
    return records, seconds


def run_measured(cmd: list, profile: Path | None = None, measured: bool = False):
    """``run_once``, and with ``measured`` (the run made by bench/lib/measured_train.py) the end
    time of each update and the peak CUDA memory in GiB (None without a GPU)."""
    if profile is not None:
        cmd = [sys.executable, "-m", "cProfile", "-o", str(profile), *cmd]
    elif measured:
        # as a module: the script imports bench, found from the repository root as this one was
        cmd = [sys.executable, "-m", "bench.lib.measured_train", *cmd[1:]]
    start = time.perf_counter()
    try:
        output = run_command(cmd, show=False)
    except CliError as err:
        raise SystemExit(f"train_end_to_end.py: error: {shlex.join(cmd[:2])} ... failed: "
                         f"{err}") from None
    seconds = time.perf_counter() - start
    lines = output.splitlines()
    ends = [{int(u): float(t) for u, t in (pair.split(":") for pair in line[len(ENDS):].split())}
            for line in lines if line.startswith(ENDS)]
    peaks = [int(line[len(PEAK):]) for line in lines if line.startswith(PEAK)]
    return (log_records(output), seconds, ends[-1] if ends else None,
            peaks[-1] / 2**30 if peaks else None)


def trained_batches(setup, last_update: int) -> list[tuple]:
    """The batch (its sentence ids) of each update 1 to ``last_update`` of the run ``setup`` was
    built from, by fairseq's own iterator: the same seed, epochs and shuffling as the run."""
    update_freq = setup.trainer.cfg.optimization.update_freq[0]
    batches, epoch = [], 1
    while len(batches) < last_update:
        itr = setup.trainer.get_train_iterator(epoch=epoch, load_dataset=False)
        samples = [tuple(sample["id"].tolist()) for sample in itr.next_epoch_itr(shuffle=True)]
        batches += [sum(samples[i:i + update_freq], ()) for i in range(0, len(samples), update_freq)]
        epoch += 1
    return batches[:last_update]


def token_matched_report(medians: dict, floor) -> dict:
    """tree2seq's time over that of the Transformer on N + M source tokens, and (with the floor
    counted) their matrix-product FLOPs on the batches tree2seq trained on."""
    tree, matched = medians[MODELS[0]], medians[TOKEN_MATCHED]
    report = {"ratio": {clock: tree[key] / matched[key] if matched[key] else None
                        for clock, key in (("wall", "seconds_per_update"),
                                           ("train_wall", "train_wall_per_update"))}}
    if floor:
        report["flop_ratio"] = floor["gflop"][MODELS[0]] / floor["gflop"][TOKEN_MATCHED]
    return report


def batches_match_log(batches: list[tuple], records: list[dict]) -> tuple[int, int]:
    """(intervals whose logged mean batch size, fairseq's ``bsz``, is that of ``batches``, log
    intervals): the check that the floor is counted on the batches the run trained on."""
    inner = [r for r in records if r["kind"] == "train_inner"]
    matched, previous = 0, 0
    for record in inner:
        update = int(record["num_updates"])
        sizes = [len(ids) for ids in batches[previous:update]]
        matched += bool(sizes) and round(sum(sizes) / len(sizes), 1) == float(record["bsz"])
        previous = update
    return matched, len(inner)


def logged_batches(batches: list[tuple], records: list[dict]) -> str:
    """``batches_match_log`` as the report says it."""
    return "{} of {} log intervals".format(*batches_match_log(batches, records))


def floor_flops(setups: dict, batches: dict) -> dict:
    """Matrix-product FLOPs of each model over its own ``batches[name]`` (each distinct batch
    counted once, weighted by how often it was trained on); the floor is tree2seq's over the
    Transformer's."""
    totals, targets = {}, {}
    for name, setup in setups.items():
        totals[name] = targets[name] = 0
        for ids, n in collections.Counter(batches[name]).items():
            batch = collate(setup, list(ids))
            totals[name] += n * update_flops(setup, [batch])["total"]
            targets[name] += n * int(batch["ntokens"])
    tree, plain = (batches[name] for name in MODELS)
    per_target = {name: totals[name] / targets[name] for name in totals}
    return {"batches": len(tree), "distinct_batches": len(set(tree)),
            "same_batches": tree == plain,
            "gflop": {name: total / 1e9 for name, total in totals.items()},
            "ratio": totals[MODELS[0]] / totals[MODELS[1]],
            "target_tokens": targets,
            "ratio_per_target_token": per_target[MODELS[0]] / per_target[MODELS[1]]}


def get_parser() -> argparse.ArgumentParser:
    parser = data_bin_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="bible-en-fr-sample")
    parser.add_argument("--config-dir", default=str(ROOT / "configs"))
    parser.add_argument("--updates", type=int, default=400, help="--max-update of every run")
    parser.add_argument("--warmup", type=int, default=20,
                        help="the clock starts at the first log line at or after this update")
    parser.add_argument("--log-every", type=int, default=20, help="fairseq's --log-interval")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each model, alternating")
    parser.add_argument("--train-args", default="", help="more fairseq-train flags, one string")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--no-floor", action="store_true", help="skip the FLOP count")
    parser.add_argument("--token-matched", action="store_true",
                        help="also time fairseq's Transformer on sources of N + M tokens (each "
                        "sentence's leaves, cycled to its number of nodes more): tree2seq's "
                        "encoder length through fairseq's own layers")
    parser.add_argument("--profile-dir", type=Path,
                        help="also run each model once under cProfile, the stats saved here")
    parser.add_argument("--torch-profile", type=Path, metavar="DIR",
                        help="also run each model once under torch.profiler, operators saved here")
    parser.add_argument("--with-stack", action="store_true",
                        help="with --torch-profile: also by the Python file calling each operator")
    parser.add_argument("--floor-of", metavar="REPORT",
                        help="count the floor of a report made with --no-floor (on a GPU "
                        "machine, say) here, on its commands without precision flags, and "
                        "write the report with it to --json (default: REPORT)")
    parser.add_argument("--json", metavar="FILE", help="also write the results here")
    return parser


def run(args, data_bin: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="e2e-") as save_dir:  # --no-save: stays empty
        cmds = {name: command(args, name, data_bin, save_dir) for name in MODELS}
        if args.token_matched:
            cmd = cmds[MODELS[1]]
            languages = (cmd[cmd.index("--source-lang") + 1], cmd[cmd.index("--target-lang") + 1])
            matched = token_matched_data_bin(Path(data_bin), Path(save_dir) / "n-plus-m",
                                             *languages)
            cmds[TOKEN_MATCHED] = command(args, MODELS[1], str(matched), save_dir)
        return measure(args, cmds)


def measure(args, cmds: dict) -> dict:
    runs, logs = {name: [] for name in cmds}, {}
    for repeat in range(args.repeats):
        order = list(cmds) if repeat % 2 == 0 else list(cmds)[::-1]
        for name in order:
            records, seconds, ends, peak = run_measured(cmds[name], measured=True)
            logs.setdefault(name, records)
            runs[name].append({**time_per_update(records, args.warmup, ends),
                               "phases": phase_times(records, args.warmup, ends),
                               "process_seconds": round(seconds, 2),
                               **({"peak_gib": round(peak, 3)} if peak is not None else {})})
            print(f"{name} run {repeat + 1}: {1000 * runs[name][-1]['seconds_per_update']:.1f} "
                  f"ms/update (train_wall {1000 * runs[name][-1]['train_wall_per_update']:.1f})",
                  flush=True)
    medians = {name: {key: statistics.median(r[key] for r in rs)
                      for key in ("seconds_per_update", "train_wall_per_update",
                                  "target_tokens_per_second") if None not in (r[key] for r in rs)}
               for name, rs in runs.items()}
    tree, plain = medians[MODELS[0]], medians[MODELS[1]]
    report = {
        "benchmark": "fairseq-train end to end: time per update from fairseq's JSON log",
        "settings": {k: str(v) if isinstance(v, Path) else v
                     for k, v in vars(args).items() if k != "json"},
        "commands": {name: shlex.join(cmd) for name, cmd in cmds.items()},
        "machine": machine(args.device), "date": time.strftime("%Y-%m-%d"),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "runs": runs, "median": medians,
        # fairseq logs both clocks in whole seconds: a run too short to tick has no ratio
        "ratio": {clock: tree[key] / plain[key] if plain[key] else None
                  for clock, key in (("wall", "seconds_per_update"),
                                     ("train_wall", "train_wall_per_update"))},
    }
    report["logs"] = logs
    if not args.no_floor:
        add_floor(report, cmds)
    elif TOKEN_MATCHED in cmds:
        report[TOKEN_MATCHED] = token_matched_report(medians, None)
    if args.profile_dir:
        args.profile_dir.mkdir(parents=True, exist_ok=True)
        report["profiles"] = {}
        for name in MODELS:
            path = args.profile_dir / f"{name}.prof"
            run_once(cmds[name], path)
            report["profiles"][name] = str(path)
    if args.torch_profile:
        report["operators"] = operator_profiles(args, cmds, report.get("floor", {}).get("ratio"))
    report["machine"]["load_average_after"] = load_average()
    return report


def add_floor(report: dict, cmds: dict) -> None:
    """The floor over the updates the report's runs timed, each model on its own batches, and
    the check of those batches against the mean batch sizes of fairseq's log."""
    runs, logs = report["runs"], report["logs"]
    first = min(r["from_update"] for rs in runs.values() for r in rs)
    last = max(r["to_update"] for rs in runs.values() for r in rs)
    setups = {name: build_setup(name, cmd[1:]) for name, cmd in cmds.items()}
    # each model's own batches: its dataset orders the examples by its own source lengths
    batches = {name: trained_batches(setup, last) for name, setup in setups.items()}
    report["batch_sizes_as_logged"] = logged_batches(batches[MODELS[0]], logs[MODELS[0]])
    report["floor"] = floor_flops(setups, {name: b[first:last] for name, b in batches.items()})
    wall = report["ratio"]["wall"]
    report["ratio / floor"] = None if wall is None else wall / report["floor"]["ratio"]
    # --max-tokens counts a tree as its leaves and nodes: where it binds, tree2seq's batches hold
    # fewer sentences than the Transformer's, and time per target token is the comparison
    speed = [report["median"][name].get("target_tokens_per_second") for name in MODELS]
    if None not in speed:
        time_ratio = speed[1] / speed[0]
        floor = report["floor"]["ratio_per_target_token"]
        report["per_target_token"] = {"time_ratio": time_ratio, "floor": floor,
                                      "ratio / floor": time_ratio / floor}
    if TOKEN_MATCHED in cmds:
        report[TOKEN_MATCHED] = token_matched_report(report["median"], report["floor"])
        report[TOKEN_MATCHED]["batch_sizes_as_logged"] = logged_batches(
            batches[TOKEN_MATCHED], logs[TOKEN_MATCHED])


# Precision flags change no batch and no FLOP count; the floor of a GPU run is counted where
# it is read back (--floor-of), on the CPU when there is no GPU
PRECISION_FLAGS = ("--fp16", "--memory-efficient-fp16", "--amp", "--bf16")


def floor_of(path: str) -> dict:
    """The report at ``path`` (made with --no-floor, on another machine) with its floor added,
    counted here on the same commands."""
    report = json.loads(Path(path).read_text(encoding="utf-8"))
    cuda = torch.cuda.is_available()
    cmds = {name: [flag for flag in shlex.split(command) if flag not in PRECISION_FLAGS]
            + ([] if cuda else ["--cpu"]) for name, command in report["commands"].items()}
    add_floor(report, cmds)
    report["floor_counted_on"] = machine("cuda" if cuda else "cpu")
    return report


def operator_profiles(args, cmds: dict, floor) -> dict:
    """One torch.profiler run a model (bench/lib/profiled_train.py), and the operators' excesses
    over the floor (over a ratio of 1 without one)."""
    args.torch_profile.mkdir(parents=True, exist_ok=True)
    paths = {name: args.torch_profile / f"{name}.json" for name in MODELS}
    tables = {}
    for name, path in paths.items():
        cmd = [sys.executable, "-m", "bench.lib.profiled_train",
               "--from-update", str(args.warmup), "--to-update", str(args.updates),
               "--json", str(path), *(["--with-stack"] if args.with_stack else []),
               "--", *cmds[name][1:]]
        run_once(cmd, None)
        tables[name] = json.loads(path.read_text())
    over, floor = ("floor", floor) if floor else ("ratio 1", 1.0)
    operator_ms = {name: {op: row["self_ms"] for op, row in t["operators"].items()}
                   for name, t in tables.items()}
    result = {"files": {name: str(path) for name, path in paths.items()},
              "self_ms_per_update": {name: t["self_ms_per_update"] for name, t in tables.items()},
              "excess_over": over,
              "excess": excesses(operator_ms, floor)}
    if args.with_stack:
        result["excess_by_file"] = excesses({name: t["files"] for name, t in tables.items()},
                                            floor)
    return result


def excesses(ms: dict, floor: float) -> list:
    """Per row of ``ms[model]`` (milliseconds per update by operator or by file): both models'
    and tree2seq's less ``floor`` times the Transformer's, largest excess first."""
    tree, plain = ms[MODELS[0]], ms[MODELS[1]]
    rows = []
    for name in set(tree) | set(plain):
        t_ms, p_ms = tree.get(name, 0.0), plain.get(name, 0.0)
        rows.append({"name": name, MODELS[0]: round(t_ms, 3), MODELS[1]: round(p_ms, 3),
                     "excess_ms": round(t_ms - floor * p_ms, 3)})
    return sorted(rows, key=lambda r: -abs(r["excess_ms"]))


def run_ms(report: dict, name: str) -> str:
    """A model's ms per update of every run, " / " between them."""
    return " / ".join(f"{1000 * run['seconds_per_update']:.1f}" for run in report["runs"][name])


def code_table(report: dict, others: str | None = None) -> list:
    """RESULTS' table of the code measured (``code`` of each report; this one, then those at
    ``others``): each model's runs, the time ratio of the medians, the floor, ratio / floor."""
    rows = []
    for each in [report] + other_reports(others):
        rows.append([each.get("code", each["date"]), run_ms(each, MODELS[0]),
                     run_ms(each, MODELS[1]), f"{each['ratio']['wall']:.3f}x",
                     f"{each['floor']['ratio']:.3f}x", f"{each['ratio / floor']:.3f}x"])
    return markdown_table(["code", "tree2seq ms (runs)", "Transformer ms (runs)", "ratio", "floor",
                           "ratio / floor"], rows)


def runs_table(report: dict) -> list:
    """Each run's ms per update, both models, their ratio; the medians on fairseq's ``wall``
    clock and on its ``train_wall`` (the time inside the train steps)."""
    tree, plain = (report["runs"][name] for name in MODELS)
    rows = [[f"run {i + 1}", f"{1000 * t['seconds_per_update']:.1f}",
             f"{1000 * p['seconds_per_update']:.1f}",
             f"{t['seconds_per_update'] / p['seconds_per_update']:.3f}x"]
            for i, (t, p) in enumerate(zip(tree, plain))]
    for label, key, clock in (("median", "seconds_per_update", "wall"),
                              ("`train_wall`, median", "train_wall_per_update", "train_wall")):
        rows.append([label, *(f"{1000 * report['median'][name][key]:.1f}" for name in MODELS),
                     f"{report['ratio'][clock]:.3f}x"])
    return markdown_table(["", "tree2seq ms/update", "Transformer ms/update", "ratio"], rows)


def token_matched_table(report: dict) -> list:
    """The three models of a ``--token-matched`` report: each run's ms per update, the median,
    the matrix-product GFLOP of the batches (where the floor was counted), and tree2seq's time
    and FLOPs over each model's."""
    names = {MODELS[0]: "tree2seq", MODELS[1]: "Transformer",
             TOKEN_MATCHED: "Transformer on N + M tokens"}
    floor = report.get("floor")
    tree_s = report["median"][MODELS[0]]["seconds_per_update"]
    rows = []
    for name, label in names.items():
        seconds = report["median"][name]["seconds_per_update"]
        row = [label, run_ms(report, name), f"{1000 * seconds:.1f}"]
        if floor:
            row.append(f"{floor['gflop'][name]:,.1f}")
        row.append("" if name == MODELS[0] else f"{tree_s / seconds:.3f}x")
        if floor:
            row.append("" if name == MODELS[0] else
                       f"{floor['gflop'][MODELS[0]] / floor['gflop'][name]:.3f}x")
        rows.append(row)
    gflop = f"matrix-product GFLOP, updates {report['settings']['warmup']}-" \
            f"{report['settings']['updates']}"
    header = ["model", "ms/update, runs", "median", *([gflop] if floor else []),
              "tree2seq's time over it", *(["tree2seq's FLOPs over it"] if floor else [])]
    return markdown_table(header, rows)


def run_phases(report: dict, name: str) -> dict:
    """A model's ``phase_times``, the median over its runs (reports made before runs stored
    them: from the first run's log lines, kept in ``logs``)."""
    runs = [r["phases"] for r in report["runs"][name] if "phases" in r]
    if not runs:
        runs = [phase_times(report["logs"][name], int(report["settings"]["warmup"]))]
    result = {"first_epoch_ends_at": runs[0]["first_epoch_ends_at"], "runs": len(runs)}
    for phase in ("first_epoch", "after_first_epoch"):
        parts = [r[phase] for r in runs if r[phase]]
        result[phase] = None if not parts else {
            key: parts[0][key] if key in ("from_update", "to_update")
            else statistics.median(p[key] for p in parts) for key in parts[0]}
    return result


def precision_of(report: dict) -> str:
    """The precision flag of a report's runs, or float32."""
    flags = [f for f in shlex.split(report["settings"].get("train_args", "")) if f in
             PRECISION_FLAGS]
    return flags[0].lstrip("-") if flags else "float32"


def batches_of(report: dict) -> str:
    """How a report's runs were batched: ``--max-tokens`` and what it counts of a tree (its
    leaves and nodes, tree_translation's default, or its leaves alone: the sentences the
    Transformer gets), or the config's own batches."""
    args = shlex.split(report["settings"].get("train_args", ""))
    if "--max-tokens" not in args:
        return "the config's"
    tokens = args[len(args) - 1 - args[::-1].index("--max-tokens") + 1]
    counts = (args[args.index("--max-tokens-counts") + 1] if "--max-tokens-counts" in args
              else "leaves-and-nodes")
    return (f"--max-tokens {tokens}, equal sentences" if counts == "leaves"
            else f"--max-tokens {tokens}")


def phases_table(report: dict, others: str | None = None) -> list:
    """What a run costs, warm-up apart (``phase_times``): per report (this one, then those at
    ``others``, comma-separated paths from the repository root) and model, ms an update in the
    first epoch and after it, and after it target tokens a second and sentences an update; then
    tree2seq over the Transformer after the first epoch, an update and a target token."""
    rows, ratios = [], []
    for each in [report] + other_reports(others):
        precision, phases = precision_of(each), {name: run_phases(each, name) for name in MODELS}
        batches = batches_of(each)
        for name in MODELS:
            first, after = phases[name]["first_epoch"], phases[name]["after_first_epoch"]
            rows.append([precision, batches, name,
                         str(phases[name]["first_epoch_ends_at"] or "-"),
                         f"{first['ms_per_update']:.1f} ({first['from_update']}-"
                         f"{first['to_update']})" if first else "-",
                         f"{after['ms_per_update']:.1f} ({after['from_update']}-"
                         f"{after['to_update']})" if after else "-",
                         f"{after['target_tokens_per_second']:,.0f}" if after else "-",
                         f"{after['sentences_per_update']:.1f}" if after else "-",
                         str(phases[name]["runs"])])
        tree, plain = (phases[name]["after_first_epoch"] for name in MODELS)
        if tree and plain:
            ratios.append(f"{precision}, {batches}: tree2seq / Transformer after the first epoch "
                          f"{tree['ms_per_update'] / plain['ms_per_update']:.3f}x an update, "
                          f"{plain['target_tokens_per_second'] / tree['target_tokens_per_second']:.3f}x"
                          f" a target token")
    lines = markdown_table(["precision", "batches", "model", "first epoch ends at update",
                            "first epoch, ms / update (updates)",
                            "after it, ms / update (updates)", "after it, target tokens / s",
                            "after it, sentences / update", "runs"], rows)
    return lines + [""] + [f"{line};" if i < len(ratios) - 1 else f"{line}."
                           for i, line in enumerate(ratios)]


def sources_table(report: dict, others: str | None = None) -> list:
    """One run a model on each tree source (``source`` of each report; this one, then those at
    ``others``): the source's nodes per word and per BPE piece and its flat trees (``trees``,
    where the report holds them), each model's ms per update, the ratio, floor, ratio / floor."""
    rows = []
    for each in [report] + other_reports(others):
        trees = each.get("trees")
        rows.append([each["source"],
                     *([f"{trees['nodes_per_word']:.3f}", f"{trees['nodes_per_bpe_piece']:.3f}",
                        f"{trees['flat_trees']:,}"] if trees else ["", "", ""]),
                     *(f"{1000 * each['median'][name]['seconds_per_update']:.1f}" for name in MODELS),
                     f"{each['ratio']['wall']:.3f}x", f"{each['floor']['ratio']:.3f}x",
                     f"{each['ratio / floor']:.3f}x"])
    return markdown_table(["source trees", "nodes / word", "nodes / BPE piece", "flat trees",
                           "tree2seq ms", "Transformer ms", "ratio", "floor", "ratio / floor"],
                          rows)


def printed(report: dict) -> list:
    lines = [f"{'model':<20} {'ms/update':>10} {'train_wall ms':>14} {'peak GiB':>9}"]
    for name, m in report["median"].items():
        peaks = [r["peak_gib"] for r in report["runs"][name] if "peak_gib" in r]
        lines.append(f"{name:<20} {1000 * m['seconds_per_update']:>10.1f} "
                     f"{1000 * m['train_wall_per_update']:>14.1f} "
                     f"{f'{max(peaks):.2f}' if peaks else '-':>9}")
    def ratio(x, width):
        return f"{'-':>{width + 1}}" if x is None else f"{x:>{width}.3f}x"
    r = report["ratio"]
    line = f"{'tree/plain':<20} {ratio(r['wall'], 9)} {ratio(r['train_wall'], 13)}"
    if "floor" in report:
        same = "" if report["floor"]["same_batches"] else " (not the same batches)"
        line += (f"   floor {report['floor']['ratio']:.3f}x over {report['floor']['batches']} "
                 f"batches{same}; ratio / floor {ratio(report['ratio / floor'], 0)}")
    lines.append(line)
    if "per_target_token" in report:
        t = report["per_target_token"]
        lines.append(f"{'per target token':<20} {ratio(t['time_ratio'], 9)} {'':>14}   floor "
                     f"{t['floor']:.3f}x; ratio / floor {ratio(t['ratio / floor'], 0)}")
    if TOKEN_MATCHED in report:
        m = report[TOKEN_MATCHED]
        line = (f"{'tree/plain N+M':<20} {ratio(m['ratio']['wall'], 9)} "
                f"{ratio(m['ratio']['train_wall'], 13)}")
        if "flop_ratio" in m:
            line += f"   FLOPs {m['flop_ratio']:.3f}x"
        lines.append(line)
    if "operators" in report:
        ops = report["operators"]
        total = {name: ops["self_ms_per_update"][name] for name in MODELS}
        lines.append(f"\ntorch.profiler, self ms per update (tree2seq {total[MODELS[0]]:.1f}, "
                     f"Transformer {total[MODELS[1]]:.1f}); excess over the {ops['excess_over']}:")
        for key in ("excess", "excess_by_file"):
            for row in ops.get(key, [])[:15]:
                lines.append(f"  {row['name'][:60]:<60} {row[MODELS[0]]:>9.2f} "
                             f"{row[MODELS[1]]:>9.2f} {row['excess_ms']:>+9.2f}")
    return lines


def main(argv=None):
    args = get_parser().parse_args(argv)
    if args.floor_of:
        report = floor_of(args.floor_of)
        return end_report(report, printed(report), args.json or args.floor_of)
    return run_benchmark(get_parser(), run, printed, argv)


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        main()
