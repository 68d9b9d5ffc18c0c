"""Seed variance of a translation comparison: several models of one config, each trained with
several seeds at the config's budget; mean ± sd sacreBLEU, and paired bootstrap resampling of
the first model against each other one, seed by seed (sacrebleu's own ``--paired-bs``).

    python -m bench.lib.seeds bible-en-fr tree2seq transformer transformer-linearized \\
        --seeds 1 2 3 --data runs/data --checkpoints runs/seeds \\
        --json bench/results/bible-seeds.json --keep bench/results/bible-seeds

Each run is ``scripts/train.sh PAIR MODEL --seed S`` then ``scripts/evaluate.sh PAIR MODEL``
(through bench/lib/compare.py's runner), its checkpoints in ``CHECKPOINTS/seed-S/``. A run whose
result is already in ``--json`` (same model and seed) is not run again, and its detokenized
translations are kept in ``--keep`` (``MODEL.seed-S.<tgt>``), so the runs of one comparison may
be made in several sessions: commit the JSON and the kept translations, and run the same
command again. The bootstrap compares two runs of the same seed on the test references
(``sacrebleu REF -i FIRST OTHER --paired-bs``, 1,000 resamples by default); its p-value is the
chance of a difference at least as large with no real difference (sacrebleu's definition).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.lib import compare
from configs.runner.config import load_config
from bench.lib.report import (difference_cell, holm, machine, markdown_table, previous_report,
                          seed_t_tests, write_json)

from fairseq_tree.data.recipe import Recipe


def sacrebleu_paired(reference: Path, first: Path, other: Path, resamples: int,
                     lowercase: bool) -> dict:
    """sacrebleu's paired bootstrap of ``other`` against ``first`` (the baseline of the call):
    both scores, and the p-value of the difference."""
    cmd = [str(Path(sys.executable).parent / "sacrebleu"), str(reference), "-i", str(first),
           str(other), "--paired-bs", "--paired-bs-n", str(resamples), "-f", "json", "-w", "4",
           *(["-lc"] if lowercase else [])]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"seeds: sacrebleu failed: {proc.stderr[-500:]}")
    baseline, system = json.loads(proc.stdout)
    return {"first_bleu": baseline["BLEU"]["score"], "other_bleu": system["BLEU"]["score"],
            "p_value": system["BLEU"]["p_value"], "command": " ".join(cmd)}


def summary(runs: list[dict], models: list[str]) -> list[dict]:
    """One row per model: mean and sample sd of sacreBLEU over its seeds."""
    rows = []
    for model in models:
        scores = [r["sacrebleu"] for r in runs if r["model"] == model]
        if scores:
            rows.append({"model": model, "seeds": [r["seed"] for r in runs if r["model"] == model],
                         "sacrebleu_mean": statistics.mean(scores),
                         "sacrebleu_sd": statistics.stdev(scores) if len(scores) > 1 else None,
                         "sacrebleu": scores})
    return rows


def seed_table(report: dict) -> list[str]:
    """The report's Markdown table of scores (bench/RESULTS.md's and the printed one): a row a
    model, mean ± sd over its seeds, the scores by seed, and the seed-level paired t-test of its
    difference from the first model with Holm's adjustment over those tests (bench/lib/report.py)."""
    rows, runs = report["summary"], report["runs"]
    first = rows[0]["model"]
    tests = {t["system"]: t for t in seed_t_tests(runs, lambda r: r["model"], first)}
    tested = [name for name, t in tests.items() if t["p_value"] is not None]
    adjusted = dict(zip(tested, holm([tests[name]["p_value"] for name in tested])))
    seeds = rows[0]["seeds"]
    body = []
    for row in rows:
        sd = f" ± {row['sacrebleu_sd']:.2f}" if row["sacrebleu_sd"] is not None else ""
        tokenized = [r["tokenized_bleu"] for s in row["seeds"] for r in runs
                     if r["model"] == row["model"] and r["seed"] == s]
        test = tests.get(row["model"])
        body.append([row["model"], f"{row['sacrebleu_mean']:.2f}{sd}",
                     ", ".join(f"{x:.2f}" for x in row["sacrebleu"]),
                     ", ".join(f"{x:.2f}" for x in tokenized),
                     difference_cell(test) if test else "",
                     f"{adjusted[row['model']]:.2g}" if row["model"] in adjusted else ""])
    return markdown_table(
        ["model", f"sacreBLEU, mean ± sd ({len(seeds)} seeds)",
         f"by seed ({', '.join(map(str, seeds))})", "tokenized BLEU by seed",
         f"minus {first}, seed-level t-test (p)", f"Holm p ({len(tested)} tests)"], body)


def bootstrap_table(report: dict) -> list[str]:
    """The paired bootstrap of the first model against each other one, a row a seed."""
    paired = report["paired_bootstrap"]
    first = paired[0]["first"] if paired else report["summary"][0]["model"]
    others = list(dict.fromkeys(p["other"] for p in paired))
    body = []
    for seed in dict.fromkeys(p["seed"] for p in paired):
        cells = {p["other"]: f"{p['first_bleu']:.2f} vs {p['other_bleu']:.2f}, "
                             f"p = {p['p_value']:.3f}" for p in paired if p["seed"] == seed}
        body.append([seed, *(cells.get(other, "") for other in others)])
    return markdown_table(["seed", *(f"{first} vs {other}" for other in others)], body)


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pair", help="a translation config of --config-dir")
    parser.add_argument("models", nargs="+", help="the first is compared with each other one")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--data", default=os.environ.get("DATA", str(compare.ROOT / "data")))
    parser.add_argument("--checkpoints", default="runs/seeds", help="one folder a seed")
    parser.add_argument("--config-dir", default=str(compare.ROOT / "configs"))
    parser.add_argument("--json", required=True, metavar="FILE",
                        help="results (read first: finished runs are not run again)")
    parser.add_argument("--keep", required=True, metavar="DIR",
                        help="where each run's detokenized translations are kept")
    parser.add_argument("--resamples", type=int, default=1000, help="of the paired bootstrap")
    return parser


def main(argv=None) -> dict:
    argv = sys.argv[1:] if argv is None else list(argv)
    extras = argv[argv.index("--") + 1:] if "--" in argv else []
    args = get_parser().parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    started = time.time()
    path, keep = Path(args.json), Path(args.keep)
    previous = previous_report(args.json)
    runs = [r for r in previous.get("runs", []) if r["pair"] == args.pair]
    data = Path(args.data).resolve()
    # a config's recipe folder may have another name than the config (its ``pair:``)
    recipe_folder = data / load_config(Path(args.config_dir) / f"{args.pair}.yaml")["pair"]
    recipe = Recipe.read(recipe_folder, kind="translation")
    target = recipe.tgt
    keep.mkdir(parents=True, exist_ok=True)
    for seed in args.seeds:
        for model in args.models:
            kept = keep / f"{model}.seed-{seed}.{target}"
            if any(r["model"] == model and r["seed"] == seed for r in runs) and kept.exists():
                continue
            env = {**os.environ, "DATA": str(data), "CONFIG_DIR": str(Path(args.config_dir)
                                                                        .resolve()),
                   "CHECKPOINTS": str((Path(args.checkpoints) / f"seed-{seed}").resolve())}
            row = compare.run_model(args.pair, model, env, ["--seed", str(seed), *extras], [])
            save_dir = Path(env["CHECKPOINTS"]) / args.pair / model
            shutil.copyfile(save_dir / f"translations.{target}", kept)
            runs = [r for r in runs if not (r["model"] == model and r["seed"] == seed)]
            runs.append({"pair": args.pair, "seed": seed, **row})
            write_json(str(path), {**previous, "runs": runs})  # a finished run is never lost
    reference = recipe_folder / "ref" / f"test.{target}"
    first, paired = args.models[0], []
    for seed in args.seeds:
        for other in args.models[1:]:
            files = [keep / f"{m}.seed-{seed}.{target}" for m in (first, other)]
            if all(f.exists() for f in files):
                paired.append({"seed": seed, "first": first, "other": other,
                               **sacrebleu_paired(reference, *files, args.resamples,
                                                  recipe.text.lowercase)})
    rows = summary(runs, args.models)
    report = {"benchmark": f"{args.pair}: {', '.join(args.models)}, seeds "
                           f"{', '.join(map(str, args.seeds))}, same budget",
              "command": " ".join(["bench/lib/seeds.py", *argv]),
              "machine": machine(),
              "date": time.strftime("%Y-%m-%d"), "wall_seconds_this_call":
                  round(time.time() - started),
              "summary": rows, "paired_bootstrap": paired, "runs": runs}
    print("\n".join(seed_table(report) + [""] + bootstrap_table(report)), flush=True)
    write_json(str(path), report)
    return report


if __name__ == "__main__":
    main()
