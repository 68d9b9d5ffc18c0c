"""Seed-level paired t-tests between runs of bench/sentiment.py reports made apart (other data,
other sessions): e.g. tree_classifier on spaCy trees against the same model on link-grammar trees.

    python -m bench.sentiment_tests --reports spacy=bench/results/sentiment-spacy.json \\
        lg=bench/results/sentiment.json --pairs lg:tree_classifier,spacy:tree_classifier \\
        --json bench/results/sentiment-spacy-tests.json

Each ``--pairs`` item is ``BASE:MODEL,OTHER:MODEL`` (report label and model), tested on every task
both have, over the seeds both have (bench/report.py's ``paired_t_test``: other - base).
"""

import argparse
import json
import sys
from pathlib import Path

from bench.report import seed_t_tests, write_json


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reports", nargs="+", required=True, metavar="LABEL=JSON")
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
        rows = [{**run, "system": f"{label}:{run['model']}"}
                for label, labelled in runs.items() for run in labelled
                if f"{label}:{run['model']}" in (base, other)]
        for task in dict.fromkeys(r["task"] for r in rows):
            for test in seed_t_tests([r for r in rows if r["task"] == task],
                                     lambda r: r["system"], base, score="test_accuracy"):
                tests.append({"task": task, "base": base, "other": other,
                              "seeds": test.pop("seed_list"),
                              **{k: v for k, v in test.items() if k not in ("baseline",
                                                                            "system")}})
                print(f"{task}  {other} - {base}: {test['mean_difference']:+.2f} (by seed "
                      + ", ".join(f"{d:+.1f}" for d in test["differences"])
                      + "), " + (f"p = {test['p_value']:.3f}" if test["p_value"] is not None
                                 else test["no_test"]))
    report = {"command": " ".join(["bench/sentiment_tests.py", *(argv if argv is not None
                                                                   else sys.argv[1:])]),
              "reports": args.reports, "tests": tests}
    write_json(args.json, report)
    return report


if __name__ == "__main__":
    main()
