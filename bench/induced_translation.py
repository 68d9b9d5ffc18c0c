"""Trees without a parser, put to use: tree2seq on source trees induced by a constituent_transformer
masked LM (Wang et al., 2019), on the Bible.

    python -m bench.induced_translation --json bench/results/induced-translation.json

* ``fr-en`` (Louis Segond -> World English Bible; French has no offline parser here): tree2seq
  on induced French trees against tree2seq on flat trees (``--parser flat``) and fairseq's
  Transformer, same budget (configs/bible-fr-en*.yaml);
* ``en-fr``: tree2seq on induced English trees against tree2seq on link-grammar trees (and the
  Transformer), configs/bible-en-fr*.yaml.

For each direction the base pair is made by its recipe (``data-prep/prepare-bible-fr-en.sh``
with flat trees, ``data-prep/prepare-bible.sh`` with link-grammar trees) under ``--data``, unless
it is there already. Then, per seed: a ``constituent_transformer_tiny`` masked LM is trained on
the source side of the training verses (bench/lib/masked_lm.py's settings, one unit per word), the
recipe is run again with ``PARSER=induced`` into ``<work>/<direction>/seed<N>/data/<pair>-induced``
(the tokenized text is copied from the base pair, so only parsing, BPE and binarizing run), and
bench/lib/compare.py trains and scores the models with ``--seed N``. The recipes read their usual
environment (``BIBLE_DIR``, ``BIBLE_MAX_PAIRS``, ``WORKERS``, ...).

A run is one translation model of one direction, pair and seed (a row of the results); each
finished run is written to ``--json`` at once, and a run found there is not run again (nor its
masked LM and induced pair made when the induced-tree run of that seed is there), so the benchmark
may be made in several sessions: commit the JSON and run the same command again. A JSON made with
other settings (masked LM, BPE, fairseq-train or fairseq-generate arguments) is refused rather
than mixed. Each call's command is added to the JSON's ``commands``.

With ``--keep DIR`` each run's detokenized translations are kept as
``DIR/<direction>.<system>.seed-<N>.<tgt>`` (system: ``tree2seq-induced``, ``tree2seq-flat``,
``tree2seq-link-grammar``, ``transformer``); a row merged from bench/lib/seeds.py's JSON (``"from"``)
has its translations where that JSON's ``--keep`` put them. Every call then writes, from the kept
translations and the base pair's ``ref/test.<tgt>``, sacrebleu's paired bootstrap of each system
against the induced-tree tree2seq of the same seed (``paired_bootstrap``), and the seed-level
paired t-test of the same differences (``seed_t_tests``, bench/lib/report.py), and counts the internal
nodes per leaf and the flat trees of the source trees it finds (``source_trees``: training and test
words, training BPE pieces; the base pairs' and, while they are in ``--work``, the induced ones):
all of it recomputed from files, no training.
"""

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.lib import compare
from bench.lib import masked_lm
from bench.lib import seeds
from bench.lib.tree_counts import tree_counts
from bench.lib.report import (
    difference_cell,
    end_report,
    holm,
    machine,
    markdown_table,
    previous_report,
    report_t_tests,
    write_json,
)

from fairseq_tree.data.recipe import Recipe, has_recipe

# direction -> (recipe, base pair (flat or link-grammar trees), source language)
DIRECTIONS = {
    "fr-en": ("prepare-bible-fr-en.sh", "bible-fr-en", "fr"),
    "en-fr": ("prepare-bible.sh", "bible-en-fr", "en"),
}
BASE_TREES = {"fr-en": "flat", "en-fr": "link-grammar"}  # the base pair's source trees
# the settings that change what a row means: a resumed run must have the same
RESULT_SETTINGS = ("lm_max_update", "lm_arg", "bpe_merges", "generate_arg", "extra")


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


def compare_model(pair: str, model: str, data: Path, checkpoints: Path, seed: int,
                  args) -> dict:
    report = compare.main([pair, model, "--data", str(data), "--checkpoints", str(checkpoints),
                           *(f"--generate-arg={arg}" for arg in args.generate_arg),
                           "--", "--seed", str(seed), *args.extra])
    return {"pair": pair, "seed": seed, **report["results"][0]}


def run_direction(direction: str, args, rows: list[dict], finish):
    """The runs of ``direction`` not in ``rows`` yet, each passed to ``finish`` when done."""
    script, base, src = DIRECTIONS[direction]
    induced = f"{base}-induced"
    done = {(r["pair"], r["model"], r["seed"]) for r in rows if r["direction"] == direction}
    todo = [(seed, pair, model) for seed in args.seeds
            for pair, model in [*((base, m) for m in args.base_models),
                                *([(induced, "tree2seq")] if args.induced else [])]
            if (pair, model, seed) not in done]
    if not todo:
        return
    base_dir = args.data / base
    if not has_recipe(base_dir):
        recipe(script, args.data)
    work = args.work / direction
    for seed, pair, model in todo:
        data, checkpoints = args.data, work / f"seed{seed}" / "checkpoints"
        if pair == induced:  # its own masked LM (the LM data once), and the trees it induces
            codes = masked_lm.make_lm_data(
                {split: base_dir / "cased" / f"{split}.{src}" for split in ("train", "valid")},
                work / "lm", args.bpe_merges)
            lm = masked_lm.train(work / "lm" / "data-bin", "constituent_transformer_tiny",
                                 work / "lm" / f"constituent-seed{seed}", seed,
                                 args.lm_max_update, args.lm_arg)
            data = work / f"seed{seed}" / "data"
            induced_pair(base_dir, data, pair, script, Path(lm["checkpoint"]), codes)
        row = {"direction": direction, **compare_model(pair, model, data, checkpoints, seed,
                                                       args)}
        if args.keep:
            kept = kept_translation(row, args.keep)
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(row["checkpoint"]).parent / f"translations.{kept.suffix[1:]}",
                            kept)
        finish(row)


def system_name(row: dict) -> str:
    """``tree2seq-induced``, ``tree2seq-flat``, ``tree2seq-link-grammar``, or the model."""
    if not row["model"].startswith("tree2seq"):
        return row["model"]
    trees = "induced" if row["pair"].endswith("-induced") else BASE_TREES[row["direction"]]
    return f"{row['model']}-{trees}"


def kept_translation(row: dict, keep: Path) -> Path:
    """Where the detokenized translations of ``row``'s run are kept."""
    target = row["direction"].split("-")[1]
    if "from" in row:  # a run of bench/lib/seeds.py: its --keep holds MODEL.seed-S.<tgt>
        command = json.loads((compare.ROOT / row["from"]).read_text(encoding="utf-8"))["command"]
        words = command.split()
        return compare.ROOT / words[words.index("--keep") + 1] / (
            f"{row['model']}.seed-{row['seed']}.{target}")
    return keep / f"{row['direction']}.{system_name(row)}.seed-{row['seed']}.{target}"


def paired_bootstrap(rows: list[dict], args) -> list[dict]:
    """sacrebleu's paired bootstrap of every system of ``--directions`` against the induced-tree
    tree2seq of the same direction and seed, where both translations are kept and the base pair's
    reference and recipe.json are there."""
    tests = []
    for row in rows:
        if row["pair"].endswith("-induced") or row["direction"] not in args.directions:
            continue
        first = next((r for r in rows if r["direction"] == row["direction"]
                      and r["seed"] == row["seed"] and r["pair"].endswith("-induced")), None)
        base = args.data / DIRECTIONS[row["direction"]][1]
        reference = base / "ref" / f"test.{row['direction'].split('-')[1]}"
        files = [kept_translation(r, args.keep) for r in (first, row)] if first else []
        if files and has_recipe(base) and all(f.exists() for f in [reference, *files]):
            lowercase = Recipe.read(base).text.lowercase
            result = seeds.sacrebleu_paired(reference, *files, args.resamples, bool(lowercase))
            tests.append({"direction": row["direction"], "seed": row["seed"],
                          "first": system_name(first), "other": system_name(row), **result})
    return tests


# the source tree files counted: (split, leaves, folder of the recipe's output)
TREE_FILES = (("train", "words", "trees"), ("test", "words", "trees"),
              ("train", "BPE pieces", "bpe"))


def source_trees(args) -> list[dict]:
    """``tree_counts`` of the source trees of each base pair and of each seed's induced pair
    (training and test words, training BPE pieces) whose recipe has finished (an induced pair
    lives in ``--work``), named by the parser its recipe.json records."""
    counts = []
    for direction in args.directions:
        _, base, src = DIRECTIONS[direction]
        places = [(None, args.data / base)] + [
            (seed, args.work / direction / f"seed{seed}" / "data" / f"{base}-induced")
            for seed in args.seeds]
        for (seed, folder), (split, leaves, sub) in itertools.product(places, TREE_FILES):
            if has_recipe(folder) and (folder / sub / f"{split}.{src}").exists():
                parser = Recipe.read(folder).text.parser
                counts.append({"direction": direction, "trees": parser, "seed": seed,
                               "split": split, "leaves_are": leaves,
                               **tree_counts(folder / sub / f"{split}.{src}")})
    return counts


DIRECTION_NAMES = {"fr-en": "French -> English", "en-fr": "English -> French"}
TREE_LABELS = {"induced": "induced (`constituent_transformer_tiny`)", "flat": "flat (`--parser flat`)",
               "link-grammar": "link-grammar"}


def seed_table(report: dict) -> list[str]:
    """The report as a Markdown table (bench/RESULTS.md's and the printed one): per direction
    and system (the induced-tree tree2seq first), sacreBLEU by seed and mean ± sd; its
    difference from the induced-tree tree2seq with the seed-level paired t-test
    (bench/lib/report.py), Holm's adjustment over the report's tests, and sacrebleu's paired
    bootstrap p of each seed (``paired_bootstrap``)."""
    rows = report["results"]
    tests = report_t_tests({"results": rows})
    tested = [t for t in tests if t["p_value"] is not None]
    adjusted = {(t["direction"], t["system"]): p
                for t, p in zip(tested, holm([t["p_value"] for t in tested]))}
    tests = {(t["direction"], t["system"]): t for t in tests}
    bootstrap = {(b["direction"], b["other"], b["seed"]): b["p_value"]
                 for b in report.get("paired_bootstrap", [])}
    seeds = sorted({r["seed"] for r in rows})
    body = []
    for direction in dict.fromkeys(r["direction"] for r in rows):
        mine = [r for r in rows if r["direction"] == direction]
        systems = sorted(dict.fromkeys((r["pair"], r["model"]) for r in mine),
                         key=lambda s: not s[0].endswith("-induced"))
        for number, (pair, model) in enumerate(systems):
            runs = {r["seed"]: r for r in mine if (r["pair"], r["model"]) == (pair, model)}
            first = next(iter(runs.values()))
            name = system_name(first)
            trees = name.split("-", 1)[1] if name.startswith("tree2seq-") else None
            scores = [runs[s]["sacrebleu"] for s in seeds if s in runs]
            key = (direction, f"{pair} {model}")
            test = tests.get(key)
            body.append([DIRECTION_NAMES.get(direction, direction) if number == 0 else "",
                         TREE_LABELS.get(trees, trees) if trees else "(leaves only)", model,
                         "-" if first.get("parameters") is None else f"{first['parameters']:,}",
                         *(f"{runs[s]['sacrebleu']:.2f}" if s in runs else "-" for s in seeds),
                         f"{statistics.mean(scores):.2f} ± {statistics.stdev(scores):.2f}"
                         if len(scores) > 1 else f"{scores[0]:.2f}",
                         difference_cell(test) if test else "",
                         f"{adjusted[key]:.2g}" if key in adjusted else "",
                         ", ".join(f"{bootstrap[(direction, name, s)]:.3f}" for s in seeds
                                   if (direction, name, s) in bootstrap)])
    return markdown_table(
        ["direction", "source trees", "model", "parameters", *(f"seed {s}" for s in seeds),
         "mean ± sd", "minus induced, seed-level t-test (p)", f"Holm p ({len(tested)} tests)",
         "bootstrap p by seed"], body)


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--directions", nargs="+", choices=list(DIRECTIONS),
                        default=list(DIRECTIONS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--base-models", nargs="*", default=["tree2seq", "transformer"],
                        help="models trained on the base pair (flat or link-grammar trees); "
                        "none: the induced-tree model only")
    parser.add_argument("--induced", action=argparse.BooleanOptionalAction, default=True,
                        help="train tree2seq on the induced trees (--no-induced: the base pair's "
                        "models only, e.g. beside a --base-models call on the other core)")
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
    parser.add_argument("--json", metavar="FILE",
                        help="results (read first: finished runs are not run again)")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep each run's translations there, and bootstrap them")
    parser.add_argument("--resamples", type=int, default=1000, help="of the paired bootstrap")
    parser.add_argument("extra", nargs="*", help="after --: more fairseq-train arguments of the "
                        "translation models")
    return parser


def merged(previous: list[dict], new: list[dict], keys: tuple[str, ...]) -> list[dict]:
    """``previous`` entries that ``new`` does not make again (same ``keys``), then ``new``: files
    that a call does not find leave what an earlier call computed from them."""
    made = {tuple(entry[key] for key in keys) for entry in new}
    return [e for e in previous if tuple(e[key] for key in keys) not in made] + new


def main(argv=None) -> dict:
    args = get_parser().parse_args(argv)
    started = time.time()
    settings = {**vars(args), "data": str(args.data), "work": str(args.work),
                "keep": args.keep and str(args.keep)}
    previous = previous_report(args.json, settings, RESULT_SETTINGS)
    rows = previous.get("results", [])
    command = " ".join(["bench/induced_translation.py",
                        *(argv if argv is not None else sys.argv[1:])])
    earlier = previous.get("commands") or ([previous["command"]] if "command" in previous else [])
    tests: dict = {}

    def report() -> dict:
        return {**{key: value for key, value in previous.items() if key != "command"},
                "benchmark": "tree2seq on induced trees vs flat / link-grammar trees vs the "
                             "Transformer (Bible)",
                "commands": [*earlier, command],
                "machine": machine(),
                "date": time.strftime("%Y-%m-%d"), "settings": settings,
                "wall_seconds_this_call": round(time.time() - started), **tests,
                "results": rows}

    def finish(row: dict):
        rows.append(row)
        if args.json:
            write_json(args.json, report())  # a finished run is never lost

    for direction in args.directions:
        run_direction(direction, args, rows, finish)
    tests["source_trees"] = merged(previous.get("source_trees", []), source_trees(args),
                                   ("direction", "trees", "seed", "split", "leaves_are"))
    if args.keep:
        tests["paired_bootstrap"] = merged(previous.get("paired_bootstrap", []),
                                           paired_bootstrap(rows, args),
                                           ("direction", "seed", "other"))
    tests["seed_t_tests"] = report_t_tests({"results": rows}) if rows else []
    return end_report(report(), seed_table(report()) if rows else None, args.json)


if __name__ == "__main__":
    main()
