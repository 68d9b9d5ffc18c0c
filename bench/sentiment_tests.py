"""Seed-level paired t-tests between runs of bench/sentiment.py reports made apart (other data,
other sessions): e.g. tree_classifier on spaCy trees against the same model on link-grammar trees.

    python -m bench.sentiment_tests --reports spacy=bench/results/sentiment-spacy.json \\
        lg=bench/results/sentiment.json --pairs lg:tree_classifier,spacy:tree_classifier \\
        --json bench/results/sentiment-spacy-tests.json

Each ``--pairs`` item is ``BASE:MODEL,OTHER:MODEL`` (report label and model), tested on every task
both have, over the seeds both have: bench/lib/report.py's ``paired_t_test`` (other - base), the
accuracies' rounding being the 0.1 they are stored to, so a difference that is the same on every
seed to that rounding gets no p-value and says why. The tests of one call are one family: each
test with a p-value gets Holm's adjusted p over them (``holm_p_value``; None for the others).
The report's table (``tests_table``) is printed and is the one bench/RESULTS.md shows.
"""

import argparse
import json
import sys
import time
from pathlib import Path

from bench.lib.model_names import SENTIMENT_MODEL_NAMES, SENTIMENT_TASK_NAMES
from bench.lib.report import (ACCURACY_ROUNDING, NO_SPREAD, holm_family, markdown_table,
                              paired_t_test, write_json)

# What the report labels of the commands in bench/RESULTS.md stand for, in the tables.
LABELS = {"lg": "link-grammar", "rec": "link-grammar", "spacy": "spaCy",
          "pat": "early stopping", "std": "2,000 updates"}


def pair_tests(runs: dict, base: str, other: str) -> list[dict]:
    """``paired_t_test`` of ``other`` against ``base`` (``LABEL:MODEL`` each) on every task both
    have, over the seeds both have."""
    scores = {}
    for system in (base, other):
        label, _, model = system.partition(":")
        for run in runs[label]:
            if run["model"] == model:
                scores.setdefault(system, {}).setdefault(run["task"], {})[run["seed"]] = \
                    run["test_accuracy"]
    tests = []
    for task in scores.get(base, {}):
        seeds = sorted(set(scores[base][task]) & set(scores.get(other, {}).get(task, {})))
        if len(seeds) > 1:
            tests.append({"task": task, "base": base, "other": other, "seed_list": seeds,
                          **paired_t_test([scores[base][task][s] for s in seeds],
                                          [scores[other][task][s] for s in seeds],
                                          rounding=ACCURACY_ROUNDING)})
    return tests


def with_holm(tests: list[dict]) -> list[dict]:
    """``tests`` with Holm's adjusted p-value over those that have a p-value (the others None)."""
    tests = [dict(test, holm_p_value=None) for test in tests]
    holm_family(tests)
    return tests


def comparison(base: str, other: str, labels: dict) -> str:
    """``other - base`` in words: the model once where both are the same model, the report
    once where both come from the same report."""
    (base_label, base_model), (label, model) = (s.split(":", 1) for s in (base, other))
    name = lambda m: SENTIMENT_MODEL_NAMES.get(m, m)
    where = lambda l: labels.get(l, l)
    if model == base_model:
        return f"{name(model)}: {where(label)} - {where(base_label)}"
    if label == base_label or where(label) == where(base_label):
        return f"{name(model)} - {name(base_model)} ({where(label)})"
    return f"{name(model)} ({where(label)}) - {name(base_model)} ({where(base_label)})"


def p_cell(p) -> str:
    return "<0.001" if p < 0.001 else f"{p:.2g}"


def tests_table(report: dict, **labels) -> list[str]:
    """The tests of a report of this script, one row each: task, the comparison (``labels``
    name the report labels beside ``LABELS``), mean difference with the seeds' own, p and
    Holm's p over the report's tests, or why a difference has no p."""
    labels = {**LABELS, **labels}
    family = sum(test["p_value"] is not None for test in report["tests"])
    rows = []
    for test in report["tests"]:
        seeds = ", ".join(f"{d:+.1f}" for d in test["differences"])
        if test["p_value"] is None:
            why = (f"the same on every seed to the {report['rounding']} the accuracies are "
                   "stored to: no spread to test" if test["no_test"] == NO_SPREAD
                   else test["no_test"])
            p, adjusted = f"none ({why})", "(not in the family)"
        else:
            p, adjusted = p_cell(test["p_value"]), p_cell(test["holm_p_value"])
        rows.append([SENTIMENT_TASK_NAMES.get(test["task"], test["task"]),
                     comparison(test["base"], test["other"], labels),
                     f"{test['mean_difference']:+.2f} ({seeds})", p, adjusted])
    return markdown_table(["task", "comparison (other - base)", "mean difference (by seed)",
                           "p", f"Holm p (over {family})"], rows)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reports", nargs="+", required=True, metavar="LABEL=JSON",
                        help="JSON may be several, joined by +")
    parser.add_argument("--pairs", nargs="+", required=True, metavar="BASE:MODEL,OTHER:MODEL")
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)
    runs = {}
    for item in args.reports:
        label, _, path = item.partition("=")
        runs[label] = [run for report in path.split("+")
                       for run in json.loads(Path(report).read_text(encoding="utf-8"))["runs"]]
    tests = []
    for item in args.pairs:
        base, other = item.split(",")
        tests += pair_tests(runs, base, other)
    report = {"command": " ".join(["bench/sentiment_tests.py", *(argv if argv is not None
                                                                   else sys.argv[1:])]),
              "date": time.strftime("%Y-%m-%d"), "reports": args.reports, "rounding": ACCURACY_ROUNDING,
              "tests": with_holm(tests)}
    print("\n".join(tests_table(report)), flush=True)
    write_json(args.json, report)
    return report


if __name__ == "__main__":
    main()
