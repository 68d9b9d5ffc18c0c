"""Hierarchical generalization over training, past early stopping (Murty et al., ACL 2023: a
Transformer language model turns hierarchical on McCoy et al.'s tense task long after its
in-distribution accuracy saturates). Each system (``CONFIG:MODEL`` of configs/) and seed trains
to ``--max-update`` in segments of ``--every`` updates, without early stopping; the checkpoint
that ends each segment is scored on the generalization set (bench/lib/hierarchical_scoring.py)
and its point added to one JSON at once, so a stopped call loses at most a segment's training,
and a later call resumes from the run's last checkpoint (or, where it is gone, trains again
without scoring the points the JSON holds). Per seed: the update at which the scored word first
passes 50% and 90%, its value at 3,000 updates (the seeds benchmark's budget) and at the end;
per system, how many seeds above 50% at 3,000 stay there and how many below turn (``turn_table``);
the figure (``--figure``, a PNG from the JSON: a panel a system, seeds thin, their mean bold).

    python -m bench.hierarchical_generalization_curves hierarchical-tense:tree2seq \\
        hierarchical-tense:tree2seq-multi-leaf-nodes hierarchical-tense:transformer \\
        hierarchical-tense-lm:transformer-lm --seeds 1 2 3 --max-update 15000 --every 1000 \\
        --data runs/data --checkpoints runs/curves \\
        --json bench/results/hierarchical-tense-curves.json \\
        --figure bench/results/hierarchical-tense-curves.png

Several calls may share one JSON (each a CPU core, ``OMP_NUM_THREADS=1``, its own systems or
seeds). ``--summary-only`` trains nothing: it rewrites the summary and the figure.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from bench.lib import compare
from bench.lib import hierarchical_scoring as scorer
from bench.lib.compare import parse_system
from bench.lib.report import locked, machine, markdown_table, read_report, write_json
from configs.runner.config import load_config
from configs.runner.fairseq_logs import progress_records
from fairseq_tree.errors import FairseqTreeError

THRESHOLDS = (50.0, 90.0)
SEEDS_BUDGET = 3000  # the updates of the seeds benchmark (configs/_hierarchical.yaml)


def segment_extras(seed: int, updates: int, every: int) -> list[str]:
    """fairseq-train's options for training up to ``updates``: after the config's, so that
    they win; no early stopping, a checkpoint and a validation every ``every`` updates."""
    return ["--seed", str(seed), "--max-update", str(updates), "--patience", "-1",
            "--save-interval-updates", str(every), "--validate-interval-updates", str(every),
            "--keep-interval-updates", "1", *compare.JSON_LOG]


def last_updates(save_dir: Path) -> int:
    """The updates of the run's last checkpoint (0 without one), from its training log."""
    log = save_dir / "train.log"
    if not (save_dir / "checkpoint_last.pt").exists() or not log.exists():
        return 0
    records = progress_records(log.read_text(encoding="utf-8"), ["valid"])
    return max((int(r["num_updates"]) for r in records), default=0)


def valid_loss(save_dir: Path, updates: int) -> float | None:
    records = progress_records((save_dir / "train.log").read_text(encoding="utf-8"), ["valid"])
    losses = [float(r["loss"]) for r in records if int(r["num_updates"]) == updates]
    return losses[-1] if losses else None


def run_curve(config: str, model: str, seed: int, args, report_path: Path):
    """Train one system and seed to --max-update, scoring each segment's checkpoint."""
    system = f"{config}:{model}"
    checkpoints = (Path(args.checkpoints) / f"seed-{seed}").resolve()
    env = {**os.environ, "DATA": str(Path(args.data).resolve()),
           "CONFIG_DIR": str(Path(args.config_dir).resolve()), "CHECKPOINTS": str(checkpoints)}
    recipe_dir = Path(args.data) / load_config(Path(args.config_dir) / f"{config}.yaml")["pair"]
    try:
        recipe = scorer.read_recipe(recipe_dir)
    except FairseqTreeError as error:
        sys.exit(f"error: {error}")
    save_dir = checkpoints / config / model
    save_dir.mkdir(parents=True, exist_ok=True)
    with locked(report_path):
        scored = {p["updates"] for p in find_run(read_report(report_path), system, seed)["points"]}
    for updates in range(args.every, args.max_update + 1, args.every):
        if updates in scored:
            continue
        if last_updates(save_dir) < updates:
            with open(save_dir / "train.log", "ab") as log:
                compare.experiment("train", config, model, env,
                                   segment_extras(seed, updates, args.every), log)
        # fairseq names no interval checkpoint at an epoch's end: the last one is that update's
        found = (sorted(save_dir.glob(f"checkpoint_*_{updates}.pt"))
                 or [save_dir / "checkpoint_last.pt"] * (last_updates(save_dir) == updates))
        if not found:
            sys.exit(f"error: {save_dir}: no checkpoint of update {updates} "
                     f"(checkpoint_*_{updates}.pt)")
        started = time.perf_counter()
        try:
            cells = scorer.score(recipe_dir, found[-1],
                                 scorer.recipe_sources(recipe_dir, recipe, ["gen"]), recipe,
                                 batch_size=args.batch_size,
                                 parsed=scorer.recipe_parses(recipe_dir, ["gen"]))["gen"]
        except (OSError, FairseqTreeError) as error:
            sys.exit(f"error: {error}")
        point = {"updates": updates, "valid_loss": valid_loss(save_dir, updates),
                 "score_seconds": round(time.perf_counter() - started, 1), "gen": cells}
        with locked(report_path):  # a scored point is never lost, whoever else writes
            report = read_report(report_path)
            run = find_run(report, system, seed)
            if run not in report.setdefault("runs", []):
                report["runs"].append(run)
            run.update({"task": recipe["task"], "trees": recipe["trees"]})
            run["points"] = sorted([p for p in run["points"] if p["updates"] != updates]
                                   + [point], key=lambda p: p["updates"])
            write_json(str(report_path), report)
        print(f"{system} seed {seed} update {updates}: {cells['all']}", file=sys.stderr,
              flush=True)


def find_run(report: dict, system: str, seed: int) -> dict:
    """The run of ``system`` and ``seed`` in ``report`` (a new one, not yet in it, if none)."""
    for run in report.get("runs", []):
        if run["system"] == system and run["seed"] == seed:
            return run
    config, _, model = system.partition(":")
    return {"system": system, "config": config, "model": model, "seed": seed, "points": []}


def scored_word(point: dict) -> float:
    return point["gen"]["all"]["scored_word"]


def first_passing(points: list[dict], threshold: float) -> int | None:
    """The first update whose scored word is above ``threshold`` (None: never)."""
    return next((p["updates"] for p in points if scored_word(p) > threshold), None)


def seed_summary(run: dict) -> dict:
    points = run["points"]
    at = {p["updates"]: scored_word(p) for p in points}
    last = points[-1] if points else None
    return {"system": run["system"], "seed": run["seed"],
            "updates": last["updates"] if last else 0,
            **{f"first_above_{t:.0f}": first_passing(points, t) for t in THRESHOLDS},
            f"at_{SEEDS_BUDGET}": at.get(SEEDS_BUDGET),
            "at_end": scored_word(last) if last else None,
            "best": max(at.values()) if at else None}


def summary(report: dict) -> dict:
    """Per seed (``seed_summary``) and per system the mean over its seeds at every update
    that all of them reached."""
    systems = list(dict.fromkeys([*report.get("systems", []),
                                  *(r["system"] for r in report.get("runs", []))]))
    runs = sorted(report.get("runs", []), key=lambda r: (systems.index(r["system"]), r["seed"]))
    means = {}
    for system in systems:
        mine = [r for r in runs if r["system"] == system]
        common = set.intersection(*({p["updates"] for p in r["points"]} for r in mine))
        means[system] = [{"updates": u, "seeds": len(mine),
                          "mean": statistics.mean(scored_word(p) for r in mine
                                                  for p in r["points"] if p["updates"] == u)}
                         for u in sorted(common)]
    return {"seeds": [seed_summary(r) for r in runs], "means": means, "systems": systems}


def curve_table(report: dict, every: int = 3000) -> list[str]:
    """A row a system and seed: the scored word (%) at the first checkpoint and every ``every``
    updates, at its last point (with its updates), and the updates at which it first passes 50%
    and 90% ("-": not by its last point)."""
    shown = sorted({p["updates"] for r in report["runs"] for p in r["points"]
                    if p["updates"] % every == 0 or p["updates"] == report["every"]})
    by_run = {(r["system"], r["seed"]): {p["updates"]: scored_word(p) for p in r["points"]}
              for r in report["runs"]}
    body = []
    for row in report["summary"]["seeds"]:
        at = by_run[(row["system"], row["seed"])]
        body.append([row["system"], str(row["seed"]),
                     *(f"{at[u]:.1f}" if u in at else "" for u in shown),
                     f"{row['at_end']:.1f} ({row['updates']:,})" if at else "",
                     *(f"{row[f'first_above_{t:.0f}']:,}" if row[f"first_above_{t:.0f}"]
                       else "-" for t in THRESHOLDS)])
    return markdown_table(["system (config:model)", "seed", *(f"{u:,}" for u in shown),
                           "last (updates)", *(f"first above {t:.0f}%" for t in THRESHOLDS)],
                          body)


def turn_table(report: dict, threshold: float = THRESHOLDS[0]) -> list[str]:
    """A row a system: of its seeds that reached ``SEEDS_BUDGET`` updates, how many are above
    ``threshold`` there and stay above it at every later point, how many are at most
    ``threshold`` there and above it at their last point (turned), and how many are above it at
    their last point; the seeds that pass the highest threshold at some point."""
    highest = THRESHOLDS[-1]
    body = []
    for system in report["summary"]["systems"]:
        runs = [r for r in report["runs"] if r["system"] == system
                and any(p["updates"] == SEEDS_BUDGET for p in r["points"])]
        if not runs:
            continue
        later = [[scored_word(p) for p in r["points"] if p["updates"] >= SEEDS_BUDGET]
                 for r in runs]
        above = [values for values in later if values[0] > threshold]
        below = [values for values in later if values[0] <= threshold]
        body.append([system, str(len(runs)),
                     f"{len(above)} ({sum(min(v) > threshold for v in above)})",
                     f"{len(below)} ({sum(v[-1] > threshold for v in below)})",
                     str(sum(v[-1] > threshold for v in later)),
                     str(sum(first_passing(r["points"], highest) is not None for r in runs))])
    return markdown_table(
        ["system (config:model)", "seeds",
         f"above {threshold:.0f}% at {SEEDS_BUDGET:,} (of them, at every later point)",
         f"at most {threshold:.0f}% at {SEEDS_BUDGET:,} (of them, above at the last point)",
         f"above {threshold:.0f}% at the last point", f"ever above {highest:.0f}%"], body)


def plot(report: dict, path: Path):
    """A panel a system: each seed's scored word on the generalization set against updates
    (thin), their mean (bold), the 50% line (matplotlib, from the bench extra)."""
    import logging

    logging.getLogger("matplotlib").setLevel(logging.WARNING)  # fairseq set the root to DEBUG
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    systems = [s for s in report["summary"]["systems"]
               if any(r["system"] == s and r["points"] for r in report["runs"])]
    if not systems:
        return
    figure, axes = pyplot.subplots(1, len(systems), figsize=(3.6 * len(systems), 3.4),
                                   squeeze=False, sharey=True)
    for axis, system in zip(axes[0], systems):
        for run in sorted((r for r in report["runs"] if r["system"] == system),
                          key=lambda r: r["seed"]):
            axis.plot([p["updates"] for p in run["points"]],
                      [scored_word(p) for p in run["points"]], linewidth=0.8, alpha=0.6,
                      label=f"seed {run['seed']}")
        mean = report["summary"]["means"][system]
        axis.plot([m["updates"] for m in mean], [m["mean"] for m in mean], color="black",
                  linewidth=2.2, label="mean")
        axis.axhline(50, color="grey", linestyle="--", linewidth=0.8)
        axis.set_ylim(-2, 102)
        axis.set_title(system.replace("hierarchical-", ""), fontsize=8)
        axis.set_xlabel("updates")
        axis.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"generalization set: {scorer.SCORED_WORD[report['task']]} %")
    axes[0][0].legend(fontsize=6)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("systems", nargs="+", type=parse_system, metavar="CONFIG:MODEL")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--max-update", type=int, default=15000)
    parser.add_argument("--every", type=int, default=1000,
                        help="updates a segment: a checkpoint scored every so many")
    scorer.add_run_options(parser, "runs/curves", "scored points are not scored again")
    parser.add_argument("--figure", type=Path, help="the PNG of the curves")
    parser.add_argument("--summary-only", action="store_true",
                        help="train nothing: rewrite the summary (and --figure) of --json")
    return parser


def main(argv=None) -> dict:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = get_parser().parse_args(argv)
    if args.every <= 0 or args.max_update % args.every:
        sys.exit("error: --max-update must be a multiple of --every (> 0)")
    scorer.check_configs(args.systems, args.config_dir)
    started = time.time()
    for seed in [] if args.summary_only else args.seeds:
        for config, model in args.systems:
            run_curve(config, model, seed, args, args.json)
    with locked(args.json):
        report = read_report(args.json)
        if not report.get("runs"):
            sys.exit(f"error: {args.json} holds no run")
        given = [*report.get("systems", []), *(f"{c}:{m}" for c, m in args.systems)]
        report["systems"] = list(dict.fromkeys(given))
        every = report.get("every", args.every) if args.summary_only else args.every
        report.update({
            "task": report["runs"][0]["task"], "every": every,
            "benchmark": f"McCoy et al.'s {report['runs'][0]['task']} task over training: "
                         f"{', '.join(report['systems'])}; a checkpoint every {every:,} "
                         "updates scored on the generalization set, no early stopping, greedy",
            "command": " ".join(["python -m bench.hierarchical_generalization_curves", *argv]),
            "machine": machine(), "date": time.strftime("%Y-%m-%d"),
            "wall_seconds_this_call": round(time.time() - started)})
        report["summary"] = summary(report)
        write_json(str(args.json), report)
        if args.figure:  # under the lock: calls sharing the JSON share the figure
            plot(report, args.figure)
    print("\n".join(curve_table(report)), flush=True)
    return report


if __name__ == "__main__":
    main()
