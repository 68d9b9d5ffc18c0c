"""The offline sentiment benchmark: tree_classifier_tiny against fairseq's roberta of the same
size, same budget, several seeds, on the Rotten Tomatoes snippets in five and two classes
(data-prep/prepare-rt-snippets.sh), plus the -HierEmb / -SubMask ablations; with --tasks, any
classification config (e.g. ``agreement``), the report's title naming the tasks run.

    bash data-prep/prepare-rt-snippets.sh
    python -m bench.sentiment --json bench/results/sentiment.json

Every run is ``scripts/train.sh TASK MODEL --seed S`` then ``scripts/evaluate.sh TASK MODEL``
(the runner, ``configs/runner``, through bench/compare.py), with the configs
``configs/rt-snippets-{5,2}.yaml``; seed S's checkpoints go to ``WORK/seed-S/``. A finished run
is not trained again. The report gives, per task and model, the mean and sample standard
deviation over the seeds of the test and valid accuracy (of the checkpoint with the best valid
accuracy), and the difference of the means from the first model.
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from bench import compare
from bench.report import end_report, machine, markdown_table

TASKS = ["rt-snippets-5", "rt-snippets-2"]
# What each config of --tasks is, for the report's title; another config is named by its file.
TASK_TITLES = {"rt-snippets-5": "Rotten Tomatoes snippets, 5 classes",
               "rt-snippets-2": "Rotten Tomatoes snippets, 2 classes",
               "agreement": "subject-verb agreement from the English Bibles"}


def run(task: str, model: str, seed: int, env: dict, extras: list[str]) -> dict:
    """Train (or finish training) and evaluate one model with one seed; its record."""
    results, log_text, seconds = compare.train_and_evaluate(task, model, env,
                                                            ["--seed", str(seed), *extras])
    record = compare.training_record(log_text)
    return {"task": task, "model": model, "seed": seed, **record,
            **best_validation(compare.valid_curve(log_text)),
            "this_call_seconds": round(seconds, 1), "test_accuracy": results["accuracy"],
            "valid_accuracy": results["valid_accuracy"], "checkpoint": results["checkpoint"]}


def best_validation(curve: list) -> dict:
    """The validation whose checkpoint fairseq kept as checkpoint_best.pt, and the whole curve
    of (epoch, updates, valid accuracy): with early stopping, how long a model went on after its
    best. fairseq compares the logged, rounded metric with ``>=`` (``is_better`` in
    ``checkpoint_utils.save_checkpoint``), so of equal scores it keeps the last."""
    if not curve:
        return {}
    best = max(reversed(curve), key=lambda point: point[2])  # max() keeps the first it sees
    return {"best_valid_epoch": best[0], "best_valid_update": best[1],
            "valid_curve": [list(point) for point in curve]}


def benchmark_title(runs: list[dict]) -> str:
    """The report's title: the tasks, models and seeds of its runs, as they were run."""
    tasks = "; ".join(f"{TASK_TITLES.get(task, task)} (configs/{task}.yaml)"
                      for task in dict.fromkeys(r["task"] for r in runs)) or "no runs"
    models = " vs ".join(dict.fromkeys(r["model"] for r in runs))
    seeds = ", ".join(str(seed) for seed in sorted({r["seed"] for r in runs}))
    return f"{tasks}: {models or 'no model'}; seeds {seeds or 'none'}"


def mean_sd(values: list[float]) -> tuple[float, float | None]:
    """Mean and sample standard deviation (None for a single value)."""
    return statistics.mean(values), statistics.stdev(values) if len(values) > 1 else None


def summary(runs: list[dict]) -> list[dict]:
    """One row per task and model: mean and sd of its seeds' accuracies, mean training time."""
    rows = []
    for task in dict.fromkeys(r["task"] for r in runs):
        mine = [r for r in runs if r["task"] == task]
        first = None
        for model in dict.fromkeys(r["model"] for r in mine):
            seeds = [r for r in mine if r["model"] == model]
            test, test_sd = mean_sd([r["test_accuracy"] for r in seeds])
            valid, valid_sd = mean_sd([r["valid_accuracy"] for r in seeds])
            first = test if first is None else first
            rows.append({"task": task, "model": model, "seeds": [r["seed"] for r in seeds],
                         "parameters": seeds[0]["parameters"], "updates": seeds[0]["updates"],
                         "test_mean": test, "test_sd": test_sd, "valid_mean": valid,
                         "valid_sd": valid_sd, "test_vs_first": test - first,
                         "train_seconds_mean": statistics.mean(r["train_seconds"] for r in seeds)})
    return rows


def table(rows: list[dict]) -> list[str]:
    cell = lambda mean, sd: f"{mean:.2f} ± {sd:.2f}" if sd is not None else f"{mean:.2f}"
    lines = [f"{'task':<14} {'model':<32} {'params':>9} {'updates':>7} {'test acc':>14} "
             f"{'valid acc':>14} {'vs first':>8} {'train s':>7}"]
    for row in rows:
        lines.append(f"{row['task']:<14} {row['model']:<32} {row['parameters']:>9,} "
                     f"{row['updates']:>7} {cell(row['test_mean'], row['test_sd']):>14} "
                     f"{cell(row['valid_mean'], row['valid_sd']):>14} "
                     f"{row['test_vs_first']:>+8.2f} {row['train_seconds_mean']:>7.0f}")
    return lines


def stopping_cell(run: dict) -> str:
    """Where a run stopped, its best validation and its test accuracy, as bench/RESULTS.md gives
    them: ``stopped at / best valid (update) / test``; ``*`` where the best validation ties an
    earlier one (fairseq kept the latest tie as checkpoint_best.pt)."""
    best = next(point for point in run["valid_curve"] if point[1] == run["best_valid_update"])
    tie = any(point[2] == best[2] for point in run["valid_curve"] if point[1] < best[1])
    return (f"{run['updates']:,} / {best[2]:.1f} ({best[1]:,}){'*' if tie else ''} / "
            f"{run['test_accuracy']:.1f}")


def runs_table(report: dict, runs: str, sources: bool = False) -> list[str]:
    """bench/RESULTS.md's table of where each run stopped (``stopping_cell``): a row per model
    (and tree source, ``SOURCE.MODEL.sSEED.json`` in the reports' names, with ``sources``), a
    column per seed, from the one-run reports that ``runs`` (a glob from the repository root)
    names; ``report`` is one of them."""
    from bench.agreement import SOURCE_NAMES, model_name, model_rank

    found = {}
    for path in sorted(Path(__file__).resolve().parents[1].glob(runs)):
        source = path.name.split(".")[0]
        for run in json.loads(path.read_text(encoding="utf-8"))["runs"]:
            found.setdefault((source, run["model"]), {})[run["seed"]] = run
    seeds = sorted({seed for by_seed in found.values() for seed in by_seed})
    source_rank = list(SOURCE_NAMES).index
    order = sorted(found, key=lambda key: (source_rank(key[0]) if sources else 0,
                                           model_rank(key[1])))
    header = (["source"] if sources else []) + ["model", *(f"seed {seed}" for seed in seeds)]
    return markdown_table(header, [
        ([SOURCE_NAMES.get(source, source)] if sources else []) + [model_name(model), *(
            stopping_cell(found[source, model][seed]) if seed in found[source, model] else "-"
            for seed in seeds)] for source, model in order])


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="+", default=TASKS, help="configs to run")
    parser.add_argument("--models", nargs="+", default=["tree_classifier", "roberta"])
    parser.add_argument("--ablations", nargs="*", default=["tree_classifier-no-hier-embed",
                                                           "tree_classifier-no-subtree-mask"])
    parser.add_argument("--ablation-tasks", nargs="*", default=TASKS,
                        help="tasks on which the ablations also run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--data", default=os.environ.get("DATA", str(compare.ROOT / "data")))
    parser.add_argument("--work", default="runs/sentiment", help="checkpoints, one folder a seed")
    parser.add_argument("--config-dir", default=str(compare.ROOT / "configs"))
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--merge", nargs="+", metavar="JSON",
                        help="train nothing: report the runs of these reports of this script "
                        "(e.g. one a run, made side by side), the last of a task, model and "
                        "seed winning")
    parser.add_argument("extra", nargs="*", help="after --: more fairseq-train arguments")
    return parser


def main(argv=None) -> dict:
    args = get_parser().parse_args(argv)
    started = time.time()
    runs = []
    if args.merge:
        found = {}
        for path in args.merge:
            for row in json.loads(Path(path).read_text(encoding="utf-8"))["runs"]:
                log = Path(row["checkpoint"]).parent / "train.log"
                if "valid_curve" in row:  # the best again, as fairseq chose it among equals
                    row.update(best_validation(row["valid_curve"]))
                elif log.is_file():  # a report made before the curve was recorded
                    row.update(best_validation(compare.valid_curve(
                        log.read_text(encoding="utf-8"))))
                found[(row["task"], row["model"], row["seed"])] = {**row, "from": path}
        args.tasks = []  # nothing to train
        runs = sorted(found.values(), key=lambda r: (TASKS.index(r["task"])
                                                     if r["task"] in TASKS else 99, r["seed"]))
    for task in args.tasks:
        models = args.models + (args.ablations if task in args.ablation_tasks else [])
        for seed in args.seeds:
            env = {**os.environ, "DATA": str(Path(args.data).resolve()),
                   "CHECKPOINTS": str((Path(args.work) / f"seed-{seed}").resolve()),
                   "CONFIG_DIR": str(Path(args.config_dir).resolve())}
            runs += [run(task, model, seed, env, args.extra) for model in models]
    rows = summary(runs)
    report = {"benchmark": benchmark_title(runs),
              "command": " ".join(["bench/sentiment.py", *(argv if argv is not None
                                                            else sys.argv[1:])]),
              "machine": machine(),
              "date": time.strftime("%Y-%m-%d"), "settings": vars(args),
              "wall_seconds": round(time.time() - started), "summary": rows, "runs": runs}
    return end_report(report, table(rows), args.json)


if __name__ == "__main__":
    main()
