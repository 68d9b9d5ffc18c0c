"""What the benchmark scripts share: the machine a report was made on, writing their report as
JSON, reading it back to resume a run, and the statistics of the results tables: the seed-level
paired t-test, the seed summary of MODEL:SEED results, and Holm's adjustment over a family.

    python -m bench.lib.report bench/results/induced-translation.json bench/results/bible-seeds.json
    python -m bench.lib.report --holm bench/results/agreement-spacy-test.json

prints that test for every system of a results JSON against its baseline (the induced-tree
tree2seq of each direction, the first model of a seed benchmark, or, in bench/agreement.py's
reports, the baseline of each row); ``--holm`` adds Holm's adjusted p-value over the tests of
each JSON, the correction for running them all.
"""

import argparse
import contextlib
import fcntl
import json
import math
import os
import platform
import shlex
import statistics
import sys
from pathlib import Path


def machine(device: str | None = None) -> dict:
    """The reports' record of where they ran. The training benchmarks' (no ``device``):
    platform, CPU count, OMP_NUM_THREADS. The timing benchmarks' (on ``device``, cpu or cuda):
    platform, processor, torch's threads and version, the device's name, and the load average
    (1, 5, 15 min) now, as other processes on the same cores slow every timing (``load_average``
    again at the end gives the load after)."""
    if device is None:
        return {"platform": platform.platform(), "cpus": os.cpu_count(),
                "omp_threads": os.environ.get("OMP_NUM_THREADS")}
    import torch

    return {"platform": platform.platform(), "processor": platform.processor(),
            "threads": torch.get_num_threads(), "torch": torch.__version__,
            "device_name": torch.cuda.get_device_name() if device == "cuda" else "cpu",
            "load_average": load_average()}


def load_average() -> list[float]:
    """The system's load average over 1, 5 and 15 minutes."""
    return list(os.getloadavg())


def write_json(path: str, report) -> None:
    """``report`` as indented JSON at ``path``, its folder created if needed."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


def end_report(report: dict, lines: list[str] | None, path: str | None) -> dict:
    """A benchmark's end: its table printed (``lines``, when given), the report written as JSON
    (when ``path`` asks for it) and returned."""
    if lines:
        print("\n".join(lines), flush=True)
    if path:
        write_json(path, report)
    return report


def previous_report(path: str | None, settings: dict | None = None, keys=()) -> dict:
    """The report already at ``path`` (empty if there is none), whose results a resumed run
    keeps. Exits if it was made with other ``settings`` in one of ``keys``: results of other
    settings are not comparable, and mixing them would go unseen."""
    if not path or not Path(path).exists():
        return {}
    report = json.loads(Path(path).read_text(encoding="utf-8"))
    made = report.get("settings", {})
    for key in keys:
        if made.get(key) != settings[key]:
            sys.exit(f"{path} holds results made with {key} = {made.get(key)!r}, not "
                     f"{settings[key]!r}: run with its settings, or write another --json")
    return report


def other_reports(others: str | None) -> list[dict]:
    """The reports at ``others``, comma-separated paths from the repository root (a table's
    option: the earlier runs it sets beside its own)."""
    root = Path(__file__).resolve().parents[2]
    return [json.loads((root / path).read_text(encoding="utf-8"))
            for path in (others.split(",") if others else [])]


def command_option(report: dict, flag: str) -> str | None:
    """The value the command that made ``report`` gave ``flag`` (None when it gave none)."""
    words = shlex.split(report.get("command", ""))
    return words[words.index(flag) + 1] if flag in words else None


def markdown_table(header: list[str], rows: list[list]) -> list[str]:
    """A Markdown table's lines: the header, its rule, a line a row (cells as given, str())."""
    return ["| " + " | ".join(map(str, header)) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(map(str, row)) + " |" for row in rows]


def t_test_p_value(t: float, df: int) -> float:
    """Two-sided p-value of Student's t with ``df`` (an integer) degrees of freedom:
    1 - A(t | df), A from the finite sums of Abramowitz and Stegun 26.7.3 (odd df) and 26.7.4
    (even df), theta = atan(|t| / sqrt(df)); both sums have terms a_k cos^k theta with
    a_{k+2} = a_k (k + 1) / (k + 2), up to k = df - 2."""
    theta = math.atan(abs(t) / math.sqrt(df))
    odd = df % 2
    term, total, k = (math.cos(theta) if odd else 1.0), 0.0, odd
    while k <= df - 2:
        total += term
        term *= (k + 1) / (k + 2) * math.cos(theta) ** 2
        k += 2
    if odd:
        return 1 - 2 / math.pi * (theta + math.sin(theta) * total)
    return 1 - math.sin(theta) * total


# Every report stores its scores (accuracies and BLEU, in percent) to 2 decimals: differences
# that agree to within twice that rounding are the same difference on every seed.
SCORE_ROUNDING = 0.01
# Accuracies stored as fairseq-validate logs them (bench/sentiment.py's) are to 0.1 (percent): a
# paired test of them treats differences that agree to within twice that as the same difference.
ACCURACY_ROUNDING = 0.1
NO_SPREAD = "the same difference on every seed: no spread to test"


def paired_t_test(first: list[float], other: list[float],
                  rounding: float = SCORE_ROUNDING) -> dict:
    """The seed-level paired t-test of every results table: the per-seed differences
    ``other - first`` (same seeds, same order), t = mean / (sd / sqrt n) with the sample sd,
    n - 1 degrees of freedom, two-sided. It sees the training's variance from seed to seed,
    which a bootstrap over test sentences does not.

    A difference that is the same on every seed (to the scores' ``rounding``: its spread is at
    most twice that) has no spread to test: its p-value is None (``no_test`` says why), never
    0, and it stays out of Holm's families (they take the tests with a p-value). One seed:
    no test either."""
    differences = [b - a for a, b in zip(first, other, strict=True)]
    n = len(differences)
    mean = statistics.mean(differences)
    sd = statistics.stdev(differences) if n > 1 else None
    t = p = no_test = None
    if n < 2:
        no_test = "one seed"
    elif max(differences) - min(differences) <= 2 * rounding + 1e-9:
        no_test = NO_SPREAD
    else:
        t = mean / (sd / math.sqrt(n))
        p = t_test_p_value(t, n - 1)
    return {"seeds": n, "differences": differences, "mean_difference": mean, "sd": sd,
            "t": t, "df": n - 1, "p_value": p, "no_test": no_test}


def mean_sd_cell(cell: dict) -> str:
    """A table's cell for a seed summary's ``{"mean", "sd"}``: mean ± sample sd, the mean alone
    for one seed, "-" for none."""
    if cell["mean"] is None:
        return "-"
    return f"{cell['mean']:.2f}" + ("" if cell["sd"] is None else f" ± {cell['sd']:.2f}")


def difference_cell(test: dict, p_format: str = ".2g") -> str:
    """A table's cell for a paired test: the mean difference and its p, or why it has none."""
    if test["p_value"] is None:
        return f"{test['mean_difference']:+.2f} ({test['no_test'] or 'no test'})"
    p = test["p_value"]
    return f"{test['mean_difference']:+.2f} ({format(p, p_format) if p >= 0.001 else '<0.001'})"


def seed_t_tests(rows: list[dict], system, baseline, score: str = "sacrebleu") -> list[dict]:
    """``paired_t_test`` of every system of ``rows`` against ``baseline`` over the seeds both
    have; ``system(row)`` names a row's system."""
    scores: dict = {}
    for row in rows:
        scores.setdefault(system(row), {})[row["seed"]] = row[score]
    tests = []
    for name, by_seed in scores.items():
        seeds = sorted(set(by_seed) & set(scores.get(baseline, {})))
        if name != baseline and len(seeds) > 1:
            tests.append({"baseline": baseline, "system": name, "seed_list": seeds,
                          **paired_t_test([scores[baseline][s] for s in seeds],
                                          [by_seed[s] for s in seeds])})
    return tests


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: the k-th smallest p times
    (m - k + 1), never below the one before it, at most 1. A test is significant at level a
    over all m when its adjusted p is below a."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted, running = [1.0] * len(p_values), 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def holm_family(tests: list[dict]) -> list[dict]:
    """The tests of one family that have a p-value (a difference with no spread has none and is
    not in the family), each given Holm's adjusted p over them all (``holm_p_value``)."""
    tested = [test for test in tests if test["p_value"] is not None]
    for test, adjusted in zip(tested, holm([test["p_value"] for test in tested])):
        test["holm_p_value"] = adjusted
    return tested


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval of a binomial proportion (``successes`` of ``trials``), as
    scipy computes it: unlike the normal approximation it stays inside [0, 1] and is not empty
    at 0 or n successes, which matters for a share of 10 seeds."""
    from scipy.stats import binomtest

    interval = binomtest(successes, trials).proportion_ci(confidence, method="wilson")
    return float(interval.low), float(interval.high)


def fisher_exact_p(successes: int, trials: int, other_successes: int, other_trials: int) -> float:
    """Two-sided p of Fisher's exact test that two binomial proportions are the same (scipy's,
    on the 2 x 2 table of successes and failures)."""
    from scipy.stats import fisher_exact

    table = [[successes, trials - successes], [other_successes, other_trials - other_successes]]
    return float(fisher_exact(table, alternative="two-sided").pvalue)


def agreement_t_tests(report: dict, skip=()) -> list[dict]:
    """The tests that bench/agreement.py stored in its seed summary: each model's row (column)
    against the baseline named by its ``vs ...`` key, per split."""
    tests = []
    for split, models in report["summary"].items():
        for model, columns in models.items():
            for column, row in columns.items():
                for key, test in row.items():
                    if key.startswith("vs ") and test and column not in skip:
                        tests.append({"column": column, "split": split, "system": model,
                                      "baseline": key[3:], "seed_list": row["seeds"],
                                      **{k: v for k, v in test.items() if k != "seeds"}})
    return tests


def holm_tests(report: dict, skip=()) -> dict:
    """Holm's adjusted p of every tested difference of ``report``'s seed summary
    (``agreement_t_tests``: every split; columns in ``skip`` left out), by (split, model,
    column): the family of ``python -m bench.lib.report --holm``."""
    return {(test["split"], test["system"], test["column"]): test["holm_p_value"]
            for test in holm_family(agreement_t_tests(report, skip))}


def seed_summary(results: dict, baseline: str | None) -> dict:
    """Per model of ``results`` ({system: {row: {"accuracy", "count"}}}, systems named
    MODEL:SEED; others are left out): each row's mean, sd and seeds' accuracies (a seed whose
    accuracy there is None left out), and the ``paired_t_test`` against ``baseline`` over the
    seeds both have."""
    by_model: dict = {}
    for name, table in results.items():
        model, sep, seed = name.rpartition(":")
        if sep:
            by_model.setdefault(model, {})[int(seed)] = table
    summary = {}
    for model, tables in by_model.items():
        rows = {}
        for row in next(iter(tables.values())):
            scores = {seed: table[row]["accuracy"] for seed, table in sorted(tables.items())
                      if table[row]["accuracy"] is not None}
            values = list(scores.values())
            rows[row] = {"seeds": list(scores), "accuracies": values,
                         "mean": round(statistics.mean(values), 2) if values else None,
                         "sd": round(statistics.stdev(values), 2) if len(values) > 1 else None,
                         "count": next(iter(tables.values()))[row]["count"]}
            base = by_model.get(baseline)
            if base is not None and model != baseline:
                seeds = [s for s in scores if s in base and base[s][row]["accuracy"] is not None]
                if len(seeds) > 1:
                    rows[row][f"vs {baseline}"] = paired_t_test(
                        [base[s][row]["accuracy"] for s in seeds], [scores[s] for s in seeds])
        summary[model] = rows
    return summary


def report_t_tests(report: dict, skip=()) -> list[dict]:
    """The seed-level tests of a results JSON: bench/induced_translation.py's (per direction,
    against the induced-tree tree2seq), bench/lib/seeds.py's (against its first model) or
    bench/agreement.py's (stored in it; columns in ``skip`` left out)."""
    if isinstance(report.get("summary"), dict):  # bench/agreement.py
        return agreement_t_tests(report, skip)
    if "runs" in report:  # bench/lib/seeds.py
        first = report["summary"][0]["model"]
        return seed_t_tests(report["runs"], lambda r: r["model"], first)
    tests = []
    for direction in dict.fromkeys(r["direction"] for r in report["results"]):
        rows = [r for r in report["results"] if r["direction"] == direction]
        induced = next((f"{r['pair']} {r['model']}" for r in rows
                        if r["pair"].endswith("-induced")), None)
        tests += [{"direction": direction, **test} for test in seed_t_tests(
            rows, lambda r: f"{r['pair']} {r['model']}", induced)]
    return tests


def t_test_line(test: dict) -> str:
    where = "".join(f"{test[key]}: " for key in ("direction", "column") if key in test)
    t = "inf" if test["t"] is not None and math.isinf(test["t"]) else f"{test['t']:.3f}"
    return (f"{where}{test['system']} - {test['baseline']}, seeds "
            f"{','.join(map(str, test['seed_list']))}: "
            + " ".join(f"{d:+.2f}" for d in test["differences"])
            + f", mean {test['mean_difference']:+.2f}, t = {t}, df {test['df']}, "
            f"p = {test['p_value']:.3f}"
            + (f", Holm p = {test['holm_p_value']:.3f}" if "holm_p_value" in test else ""))

@contextlib.contextmanager
def locked(path: Path):
    """Exclusive use of the report ``path`` by this process (its ``.lock`` beside it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{path}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def read_report(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}



def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description="the seed-level paired t-test of a results "
                                     "JSON (bench/induced_translation.py's, bench/lib/seeds.py's "
                                     "or bench/agreement.py's)")
    parser.add_argument("json", nargs="+")
    parser.add_argument("--holm", action="store_true",
                        help="add Holm's adjusted p-value over the tests of each JSON")
    parser.add_argument("--skip-column", action="append", default=[], metavar="COLUMN",
                        help="bench/agreement.py's reports: leave this column out (repeatable)")
    args = parser.parse_args(argv)
    tests = []
    for path in args.json:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
        tests_of_report = report_t_tests(report, args.skip_column)
        mine = (holm_family(tests_of_report) if args.holm else
                [test for test in tests_of_report if test["p_value"] is not None])
        print(f"{path} ({len(mine)} tests)\n"
              + "\n".join(f"  {t_test_line(test)}" for test in mine))
        tests += mine
    return tests


if __name__ == "__main__":
    main()
