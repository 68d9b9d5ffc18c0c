"""McCoy, Frank & Linzen's (TACL 2020) hierarchical generalization, several systems and seeds:
each system (``CONFIG:MODEL``, a config of configs/ and one of its models: tree2seq on gold,
right-branching or spaCy trees, fairseq's Transformer on the leaves or on the linearized tree)
trained with each seed at its config's budget, the checkpoint of the best in-distribution valid
loss scored as bench/hierarchical_generalization.py scores it (bench/lib/hierarchical_scoring.py)
on the test and generalization sets; mean ± sd over the seeds, and the seed-level paired t-test
of every system against the first, with Holm's adjustment over all the report's tests.

    python -m bench.hierarchical_generalization_seeds hierarchical-tense:transformer \\
        hierarchical-tense:tree2seq hierarchical-tense-right-branching:tree2seq \\
        --seeds 1 2 3 --data runs/data --checkpoints runs/hierarchical \\
        --json bench/results/hierarchical-tense.json

Each run is ``scripts/train.sh CONFIG MODEL --seed S`` (bench/lib/compare.py's runner), its
checkpoints and training log in ``CHECKPOINTS/seed-S/CONFIG/MODEL/``. A run already in ``--json``
is not run again, and every finished run is added to it at once (under a lock: several calls may
share one JSON, each with its own systems or seeds, e.g. one a CPU core with
``OMP_NUM_THREADS=1``); the summary and the tests are rewritten from all its runs at the end of
each call. Arguments after ``--`` go to fairseq-train.
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
from bench.lib.report import (difference_cell, fisher_exact_p, holm, holm_family, locked,
                              machine, markdown_table, mean_sd_cell, paired_t_test, read_report,
                              wilson_interval, write_json)
from configs.runner.config import load_config
from configs.runner.fairseq_logs import progress_records
from fairseq_tree.errors import FairseqTreeError

SPLITS = ("test", "gen")
# the measures every system is tested on, against the first system: the paper's (the scored
# word on the generalization set) and the whole output there
TESTED = (("gen", "scored_word"), ("gen", "full_sentence"))
# A seed generalizes hierarchically when the scored word of the generalization set is right on
# more than half of its examples: the outcomes are bimodal (near 0% or near 100% a seed), so the
# share of seeds that do is the measure, with its Wilson interval; systems with at least
# RATE_TEST_SEEDS seeds are compared pairwise by Fisher's exact test, Holm over the pairs
GENERALIZES_ABOVE = 50.0
RATE_TEST_SEEDS = 10
SUMMARIZED = (("test", "full_sentence"), ("gen", "full_sentence"), ("gen", "scored_word"),
              ("gen", "linear_word"))
# McCoy et al. (2020), accuracy on the generalization set in percent, one run each unless said
# (shared/papers/NOTES.md, F; bench/RESULTS.md sets them beside ours)
PAPER = {
    "tense": [("GRU", "main verb", "3.5"),
              ("LSTM with attention", "main verb", "0.08"),
              ("tree-GRU encoder + tree-GRU decoder, parse trees", "main verb", "97.3"),
              ("tree-GRU encoder + tree-GRU decoder, right-branching trees", "main verb",
               "11.9")],
    "question": [("GRU encoder + GRU decoder", "first word", "0.8"),
                 ("GRU with location attention (5 runs)", "first word", "85.9"),
                 ("tree-GRU encoder + GRU decoder", "first word", "21.4"),
                 ("GRU encoder + tree-GRU decoder", "first word", "99.5"),
                 ("tree-GRU encoder + tree-GRU decoder", "first word", "99.8")],
}


def best_validation(log_text: str) -> dict:
    """The validation with the lowest loss of a run's log (the one checkpoint_best.pt holds) and
    the number of validations."""
    valid = [r for r in progress_records(log_text, ["valid"]) if "loss" in r]
    if not valid:
        raise SystemExit("hierarchical_generalization_seeds: the training log has no validation")
    best = min(valid, key=lambda r: float(r["loss"]))
    return {"best_valid_loss": float(best["loss"]), "best_updates": int(best["num_updates"]),
            "validations": len(valid)}


def train_and_score(config: str, model: str, seed: int, args, extras: list[str]) -> dict:
    """Train (or finish training) one system with one seed, score its best checkpoint."""
    checkpoints = (Path(args.checkpoints) / f"seed-{seed}").resolve()
    env = {**os.environ, "DATA": str(Path(args.data).resolve()),
           "CONFIG_DIR": str(Path(args.config_dir).resolve()), "CHECKPOINTS": str(checkpoints)}
    save_dir = checkpoints / config / model
    save_dir.mkdir(parents=True, exist_ok=True)
    with open(save_dir / "train.log", "ab") as log:
        compare.experiment("train", config, model, env,
                           ["--seed", str(seed), *extras, *compare.JSON_LOG], log)
    log_text = (save_dir / "train.log").read_text(encoding="utf-8")
    recipe_dir = Path(args.data) / load_config(Path(args.config_dir) / f"{config}.yaml")["pair"]
    started = time.perf_counter()
    try:
        recipe = scorer.read_recipe(recipe_dir)
        splits = scorer.score(recipe_dir, save_dir / "checkpoint_best.pt",
                              scorer.recipe_sources(recipe_dir, recipe, SPLITS), recipe,
                              beam=args.beam, batch_size=args.batch_size,
                              parsed=scorer.recipe_parses(recipe_dir, SPLITS))
    except (OSError, FairseqTreeError) as error:
        sys.exit(f"error: {error}")
    return {"system": f"{config}:{model}", "config": config, "model": model, "seed": seed,
            "task": recipe["task"], "trees": recipe["trees"],
            **compare.training_record(log_text), **best_validation(log_text),
            "score_seconds": round(time.perf_counter() - started, 1),
            "checkpoint": str(save_dir / "checkpoint_best.pt"), "splits": splits}


def measure(run: dict, split: str, name: str, modifier: str | None = None) -> float:
    cells = run["splits"][split]
    return (cells["all"] if modifier is None else cells["by_subject_modifier"][modifier])[name]


def summary(runs: list[dict], systems: list[str]) -> list[dict]:
    """A row a system: mean and sample sd over its seeds of each SUMMARIZED measure, and of the
    generalization set's measures by subject modifier."""
    rows = []
    for system in systems:
        mine = sorted((r for r in runs if r["system"] == system), key=lambda r: r["seed"])
        if not mine:
            continue

        def cell(split, name, modifier=None):
            values = [measure(r, split, name, modifier) for r in mine]
            return {"mean": statistics.mean(values),
                    "sd": statistics.stdev(values) if len(values) > 1 else None,
                    "values": values}

        modifiers = mine[0]["splits"]["gen"]["by_subject_modifier"]
        rows.append({"system": system, "seeds": [r["seed"] for r in mine],
                     "updates": [r["best_updates"] for r in mine],
                     **{f"{split} {name}": cell(split, name) for split, name in SUMMARIZED},
                     "gen by subject modifier": {
                         modifier: {name: cell("gen", name, modifier)
                                    for name in ("scored_word", "linear_word", "full_sentence")}
                         for modifier in modifiers}})
    return rows


def t_tests(runs: list[dict], systems: list[str]) -> list[dict]:
    """Every system against the first, on each TESTED measure, over the seeds both have;
    Holm's adjustment over all of them (those with a p-value)."""
    baseline = systems[0]
    by_seed = {s: {r["seed"]: r for r in runs if r["system"] == s} for s in systems}
    tests = []
    for system in systems[1:]:
        seeds = sorted(set(by_seed[system]) & set(by_seed[baseline]))
        if len(seeds) < 2:
            continue
        for split, name in TESTED:
            tests.append({"system": system, "baseline": baseline, "measure": f"{split} {name}",
                          "seed_list": seeds,
                          **paired_t_test([measure(by_seed[baseline][s], split, name)
                                           for s in seeds],
                                          [measure(by_seed[system][s], split, name)
                                           for s in seeds])})
    holm_family(tests)  # each test with a p-value gets its Holm p over them all
    return tests


def seed_rates(runs: list[dict], systems: list[str]) -> list[dict]:
    """A row a system: its seeds' scored word on the generalization set, how many of them
    generalize (above GENERALIZES_ABOVE) and that share's 95% Wilson interval."""
    rows = []
    for system in systems:
        mine = sorted((r for r in runs if r["system"] == system), key=lambda r: r["seed"])
        if not mine:
            continue
        values = [measure(r, "gen", "scored_word") for r in mine]
        generalizing = sum(v > GENERALIZES_ABOVE for v in values)
        low, high = wilson_interval(generalizing, len(values))
        rows.append({"system": system, "seeds": [r["seed"] for r in mine], "values": values,
                     "generalizing": generalizing, "share": generalizing / len(values),
                     "wilson_95": [low, high]})
    return rows


def rate_tests(rates: list[dict]) -> list[dict]:
    """Fisher's exact test of every pair of systems with at least RATE_TEST_SEEDS seeds: the
    same share of generalizing seeds? Holm's adjustment over the pairs."""
    tested = [row for row in rates if len(row["seeds"]) >= RATE_TEST_SEEDS]
    tests = [{"system": a["system"], "other": b["system"],
              "p_value": fisher_exact_p(a["generalizing"], len(a["seeds"]),
                                        b["generalizing"], len(b["seeds"]))}
             for i, a in enumerate(tested) for b in tested[i + 1:]]
    for test, adjusted in zip(tests, holm([t["p_value"] for t in tests])):
        test["holm_p_value"] = adjusted
    return tests


def rate_table(report: dict) -> list[str]:
    """A row a system: the share of its seeds that generalize hierarchically with its Wilson
    interval, and the scored word seed by seed."""
    word = scorer.SCORED_WORD[report["task"]]
    body = [[row["system"], str(len(row["seeds"])),
             f"{row['generalizing']} ({100 * row['share']:.0f}%)",
             f"{100 * row['wilson_95'][0]:.0f}-{100 * row['wilson_95'][1]:.0f}%",
             ", ".join(f"{seed}: {value:.1f}" for seed, value in zip(row["seeds"], row["values"]))]
            for row in report["rates"]]
    return markdown_table(["system (config:model)", "seeds",
                           f"seeds above {GENERALIZES_ABOVE:.0f}% {word}",
                           "95% Wilson interval", f"generalization: {word} % by seed"], body)


def rate_test_table(report: dict) -> list[str]:
    """Fisher's exact test of the shares of generalizing seeds, a row a pair of systems."""
    shares = {row["system"]: f"{row['generalizing']}/{len(row['seeds'])}"
              for row in report["rates"]}
    body = [[f"{t['system']} ({shares[t['system']]})", f"{t['other']} ({shares[t['other']]})",
             f"{t['p_value']:.2g}", f"{t['holm_p_value']:.2g}"]
            for t in report["rate_tests"]]
    return markdown_table(["system (seeds generalizing)", "against", "Fisher's exact p",
                           f"Holm p ({len(report['rate_tests'])} pairs)"], body)


def summary_table(report: dict) -> list[str]:
    """A row a system: mean ± sd over its seeds of the whole output on test and on the
    generalization set, of the scored word there and of how often it follows the linear rule;
    the scored word's difference from the first system (seed-level paired t-test), its Holm p
    over the report's tests, and the scored word seed by seed."""
    word = scorer.SCORED_WORD[report["task"]]
    tests = {t["system"]: t for t in report["tests"] if t["measure"] == "gen scored_word"}
    body = []
    for row in report["summary"]:
        test = tests.get(row["system"])
        body.append([row["system"], ", ".join(map(str, row["seeds"])),
                     *(mean_sd_cell(row[f"{split} {name}"]) for split, name in SUMMARIZED),
                     difference_cell(test) if test else "",
                     f"{test['holm_p_value']:.2g}" if test and "holm_p_value" in test else "",
                     ", ".join(f"{v:.2f}" for v in row["gen scored_word"]["values"])])
    first = report["summary"][0]["system"] if report["summary"] else ""
    return markdown_table(
        ["system (config:model)", "seeds", "test: sentence %", "generalization: sentence %",
         f"generalization: {word} %", f"{word} by the linear rule %",
         f"{word} minus {first} (p)", f"Holm p ({len(report['tests'])} tests)",
         f"{word} % by seed"], body)


def modifier_table(report: dict) -> list[str]:
    """The generalization set by what modifies the main subject (PP, relative clause): a row a
    system and modifier, mean ± sd of the scored word right, of it following the linear rule,
    and of the whole sentence right (the other verbs too: a relative clause's)."""
    word = scorer.SCORED_WORD[report["task"]]
    body = [[row["system"], modifier, mean_sd_cell(cells["scored_word"]),
             mean_sd_cell(cells["linear_word"]),
             mean_sd_cell(cells["full_sentence"])]
            for row in report["summary"]
            for modifier, cells in row["gen by subject modifier"].items()]
    return markdown_table(["system", "subject modifier", f"{word} %",
                           f"{word} by the linear rule %", "sentence %"], body)


def paper_table(report: dict) -> list[str]:
    """McCoy et al.'s figures for the report's task (one run each)."""
    return markdown_table(["McCoy et al. (2020)", "generalization set: scored word",
                           "accuracy %"], [list(row) for row in PAPER[report["task"]]])


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("systems", nargs="+", type=parse_system, metavar="CONFIG:MODEL",
                        help="the first is the baseline of every test")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    scorer.add_run_options(parser, "runs/hierarchical", "finished runs are not run again")
    parser.add_argument("--beam", type=int, default=1, help="1: greedy, as the paper")
    parser.add_argument("--summary-only", action="store_true",
                        help="train nothing: rewrite the summary and tests of --json")
    return parser


def main(argv=None) -> dict:
    argv = sys.argv[1:] if argv is None else list(argv)
    extras = argv[argv.index("--") + 1:] if "--" in argv else []
    args = get_parser().parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    systems = [f"{config}:{model}" for config, model in args.systems]
    scorer.check_configs(args.systems, args.config_dir)
    started = time.time()
    for seed in [] if args.summary_only else args.seeds:
        for config, model in args.systems:
            system = f"{config}:{model}"
            with locked(args.json):
                done = any(r["system"] == system and r["seed"] == seed
                           for r in read_report(args.json).get("runs", []))
            if done:
                continue
            run = train_and_score(config, model, seed, args, extras)
            with locked(args.json):  # a finished run is never lost, whoever else writes
                report = read_report(args.json)
                report["runs"] = [r for r in report.get("runs", [])
                                  if not (r["system"] == system and r["seed"] == seed)] + [run]
                write_json(str(args.json), report)
    with locked(args.json):
        report = read_report(args.json)
        runs = report.get("runs", [])
        if not runs:
            sys.exit(f"error: {args.json} holds no run")
        # the first system ever given stays the baseline; systems of other calls follow
        given = [*report.get("systems", []), *systems, *(r["system"] for r in runs)]
        ordered = [s for s in dict.fromkeys(given) if any(r["system"] == s for r in runs)]
        report.update({
            "task": runs[0]["task"], "systems": ordered,
            "benchmark": f"McCoy et al.'s {runs[0]['task']} task: {', '.join(ordered)}; seeds "
                         f"{', '.join(map(str, sorted({r['seed'] for r in runs})))}, each at its "
                         "config's budget, best valid loss, greedy decoding",
            "command": " ".join(["python -m bench.hierarchical_generalization_seeds", *argv]),
            "machine": machine(), "date": time.strftime("%Y-%m-%d"),
            "wall_seconds_this_call": round(time.time() - started),
            "summary": summary(runs, ordered), "tests": t_tests(runs, ordered),
            "rates": seed_rates(runs, ordered), "runs": runs})
        report["rate_tests"] = rate_tests(report["rates"])
        write_json(str(args.json), report)
    print("\n".join(summary_table(report) + [""] + modifier_table(report) + [""]
                    + rate_table(report) + [""] + rate_test_table(report)), flush=True)
    return report


if __name__ == "__main__":
    main()
