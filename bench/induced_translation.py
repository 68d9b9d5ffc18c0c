"""Trees without a parser, put to use: tree2seq on source trees induced by a constituent_transformer
masked LM (Wang et al., 2019), on the Bible.

    python bench/induced_translation.py --json bench/results/induced-translation.json

* ``fr-en`` (Louis Segond -> World English Bible; French has no offline parser here): tree2seq
  on induced French trees against tree2seq on flat trees (``--parser flat``) and fairseq's
  Transformer, same budget (configs/bible-fr-en*.yaml);
* ``en-fr``: tree2seq on induced English trees against tree2seq on link-grammar trees (and the
  Transformer), configs/bible-en-fr*.yaml.

For each direction the base pair is made by its recipe (``data-prep/prepare-bible-fr-en.sh``
with flat trees, ``data-prep/prepare-bible.sh`` with link-grammar trees) under ``--data``, unless
it is there already. Then, per seed: a ``constituent_transformer_tiny`` masked LM is trained on
the source side of the training verses (bench/masked_lm.py's settings, one unit per word), the
recipe is run again with ``PARSER=induced`` into ``<work>/<direction>/seed<N>/data/<pair>-induced``
(the tokenized text is copied from the base pair, so only parsing, BPE and binarizing run), and
bench/compare.py trains and scores the models with ``--seed N``. The recipes read their usual
environment (``BIBLE_DIR``, ``BIBLE_MAX_PAIRS``, ``WORKERS``, ...).
"""

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
import masked_lm  # noqa: E402
from report import write_json  # noqa: E402

# direction -> (recipe, base pair (flat or link-grammar trees), source language)
DIRECTIONS = {
    "fr-en": ("prepare-bible-fr-en.sh", "bible-fr-en", "fr"),
    "en-fr": ("prepare-bible.sh", "bible-en-fr", "en"),
}


def recipe(script: str, data: Path, **env):
    """A data-prep recipe, as a user runs it, with extra environment."""
    proc = subprocess.run(["bash", str(masked_lm.ROOT / "data-prep" / script)],
                          env={**os.environ, "DATA": str(data.resolve()), **env})
    if proc.returncode != 0:
        sys.exit(f"induced_translation: {script} failed (exit {proc.returncode})")


def induced_pair(base_dir: Path, data: Path, pair: str, script: str, checkpoint: Path,
                 codes: Path | None):
    """``data/pair``: the base pair's text, source trees induced by ``checkpoint``."""
    work = data / pair
    for folder in ("cased", "ref"):
        if not (work / folder).exists():
            shutil.copytree(base_dir / folder, work / folder)
    args = f"--induced-checkpoint {checkpoint.resolve()}"
    if codes:
        args += f" --induced-bpe-codes {codes.resolve()}"
    recipe(script, data, PARSER="induced", PARSER_ARGS=args, BIBLE_PAIR=pair, PARSE_WORKERS="1")


def compare_models(pair: str, models: list[str], data: Path, checkpoints: Path, seed: int,
                   args) -> list[dict]:
    report = compare.main([pair, *models, "--data", str(data), "--checkpoints", str(checkpoints),
                           *(f"--generate-arg={arg}" for arg in args.generate_arg),
                           "--", "--seed", str(seed), *args.extra])
    return [{"pair": pair, "seed": seed, **row} for row in report["results"]]


def run_direction(direction: str, args) -> list[dict]:
    script, base, src = DIRECTIONS[direction]
    base_dir = args.data / base
    if not (base_dir / "recipe.json").exists():
        recipe(script, args.data)
    work = args.work / direction
    codes = masked_lm.make_lm_data(
        {split: base_dir / "cased" / f"{split}.{src}" for split in ("train", "valid")},
        work / "lm", args.bpe_merges)
    rows = []
    for seed in args.seeds:
        lm = masked_lm.train(work / "lm" / "data-bin", "constituent_transformer_tiny",
                             work / "lm" / f"constituent-seed{seed}", seed, args.lm_max_update,
                             args.lm_arg)
        seed_data = work / f"seed{seed}" / "data"
        induced_pair(base_dir, seed_data, f"{base}-induced", script, Path(lm["checkpoint"]),
                     codes)
        checkpoints = work / f"seed{seed}" / "checkpoints"
        if args.base_models:
            rows += compare_models(base, args.base_models, args.data, checkpoints, seed, args)
        rows += compare_models(f"{base}-induced", ["tree2seq"], seed_data, checkpoints, seed,
                               args)
    return [{"direction": direction, **row} for row in rows]


def summary(rows: list[dict]) -> list[str]:
    """sacreBLEU per system and seed, the median, and its difference from the induced trees."""
    lines = [f"{'direction':<9} {'pair':<22} {'model':<12} {'median':>7} {'vs induced':>10}  "
             "sacreBLEU per seed"]
    for direction in dict.fromkeys(r["direction"] for r in rows):
        mine = [r for r in rows if r["direction"] == direction]
        systems = list(dict.fromkeys((r["pair"], r["model"]) for r in mine))
        median = {s: statistics.median(r["sacrebleu"] for r in mine
                                       if (r["pair"], r["model"]) == s) for s in systems}
        induced = median[next(s for s in systems if s[0].endswith("-induced"))]
        for system in systems:
            scores = [r["sacrebleu"] for r in mine if (r["pair"], r["model"]) == system]
            lines.append(f"{direction:<9} {system[0]:<22} {system[1]:<12} {median[system]:>7.2f}"
                         f" {median[system] - induced:>+10.2f}  "
                         + " ".join(f"{x:.2f}" for x in scores))
    return lines


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--directions", nargs="+", choices=list(DIRECTIONS),
                        default=list(DIRECTIONS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--base-models", nargs="*", default=["tree2seq", "transformer"],
                        help="models trained on the base pair (flat or link-grammar trees); "
                        "none: the induced-tree model only")
    parser.add_argument("--lm-max-update", type=int, default=1500)
    parser.add_argument("--lm-arg", action="append", default=[], metavar="ARG",
                        help="an extra fairseq-train argument of the masked LMs (repeatable)")
    parser.add_argument("--bpe-merges", type=int, default=4000,
                        help="merges of the masked LM's first-piece units")
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("DATA", "data")),
                        help="the recipes' output root, for the base pairs (default: $DATA or "
                        "data)")
    parser.add_argument("--work", type=Path, default=Path("runs/induced-translation"))
    parser.add_argument("--generate-arg", action="append", default=[], metavar="ARG")
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("extra", nargs="*", help="after --: more fairseq-train arguments of the "
                        "translation models")
    return parser


def main(argv=None) -> dict:
    args = get_parser().parse_args(argv)
    started = time.time()
    rows = [row for direction in args.directions for row in run_direction(direction, args)]
    report = {"benchmark": "tree2seq on induced trees vs flat / link-grammar trees vs the "
                           "Transformer (Bible)",
              "command": " ".join(["bench/induced_translation.py",
                                   *(argv if argv is not None else sys.argv[1:])]),
              "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                          "omp_threads": os.environ.get("OMP_NUM_THREADS")},
              "date": time.strftime("%Y-%m-%d"),
              "settings": {**vars(args), "data": str(args.data), "work": str(args.work)},
              "wall_seconds": round(time.time() - started), "results": rows}
    print("\n".join(summary(rows)), flush=True)
    if args.json:
        write_json(args.json, report)
    return report


if __name__ == "__main__":
    main()
