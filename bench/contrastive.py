"""Contrastive evaluation of translation models (Sennrich 2017; Burlot & Yvon 2017): a model is
right on an item when it gives the reference translation a higher log-probability than the
contrast, a minimally different wrong translation. Accuracy per phenomenon, condition and
attractor, every model; with several seeds the mean ± sd and seed-level paired t-tests against a
baseline, with Holm's correction over them all (a difference the same for every seed has no
t-test: the table says so, and it stays out of Holm's family).

    python -m bench.contrastive --set data/contrastive-en-fr --recipe data/bible-en-fr-sample \\
        --checkpoint tree2seq:1=checkpoints/seed-1/tree2seq/checkpoint_best.pt ... \\
        --checkpoint transformer:1=... --baseline transformer \\
        --recipe-for tree2seq-spacy=data/bible-en-fr-sample-spacy \\
        --json bench/results/contrastive.json --markdown contrastive.md

``--set`` is a folder of ``source.<src>``, ``reference.<tgt>`` and ``contrast.<tgt>`` (line-
aligned raw text) and, optionally, ``items.tsv`` naming each item's phenomenon, condition and
attractor (``data-prep/contrastive_agreement.py`` writes all four; without items.tsv every item
is in one row, ``all``). Each model scores both translations with the translation hub's
``score`` (what ``fairseq-tree-translate --score-targets`` prints): the source parsed by the
parser of the model's recipe (``--recipe``, or ``--recipe-for MODEL=DIR``), tokenised and split
into its subwords as the training sources were; the targets as the training targets were.
Sources are parsed once per recipe. Name checkpoints ``MODEL:SEED`` (``bench/lib/report.py``'s
``seed_summary``); ``--scores DIR`` writes each model's two log-probabilities per item. Beside
the accuracies, each checkpoint's training as its folder records it (fairseq-train's
``train.log``: the valid-loss curve, the best validation, whether it stopped early) and its
sacreBLEU (``scripts/evaluate.sh``'s ``test-results.json``), where present. A
``--json`` report already there keeps the results of the checkpoints it scored on the same set
(same name, same file): a call with more checkpoints scores only the new ones. With
``--keep-missing``, a named checkpoint whose file is gone (a run trained on another machine, or
one whose folder was lost) keeps that report's results, sha256 and training record for its name,
and the report lists it under ``kept_without_file``; without it, a missing file is an error.
"""

import argparse
import collections
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

from bench.lib.compare import valid_curve
from bench.lib.named_options import named_values
from bench.lib.report import (
    agreement_t_tests,
    command_option,
    difference_cell,
    mean_sd_cell,
    end_report,
    holm_family,
    machine,
    markdown_table,
    previous_report,
    seed_summary,
)

from fairseq_tree.data.recipe import Recipe
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.parsing import ParserUnavailable

ALL = "all"
VALUE_ORDER = ("sg", "pl", "m", "f")


def read_set(folder: Path, src: str, tgt: str) -> tuple[list[str], ...]:
    """Sources, references, contrasts, each item's row name and its subject's value of the
    feature its contrast flips (items.tsv's ``feature``, e.g. ``gender`` -> ``subject_gender``;
    ``subject_number`` where it names none; "" where items.tsv does not say); a missing file or a
    line count that differs is an error naming the file."""
    files = [folder / f"source.{src}", folder / f"reference.{tgt}", folder / f"contrast.{tgt}"]
    texts = []
    for path in files:
        if not path.is_file():
            raise FairseqTreeError(f"{path}: missing (the contrastive set's {path.stem}s)")
        texts.append(path.read_text(encoding="utf-8").splitlines())
    for path, lines in zip(files[1:], texts[1:]):
        if len(lines) != len(texts[0]):
            raise FairseqTreeError(f"{path}: {len(lines)} lines, {files[0]} {len(texts[0])}")
    rows, values = [ALL] * len(texts[0]), [""] * len(texts[0])
    items = folder / "items.tsv"
    if items.is_file():
        lines = items.read_text(encoding="utf-8").splitlines()
        header = lines[0].split("\t")
        if len(lines) - 1 != len(texts[0]):
            raise FairseqTreeError(f"{items}: {len(lines) - 1} items, {files[0]} {len(texts[0])}")
        for k, line in enumerate(lines[1:]):
            item = dict(zip(header, line.split("\t")))
            if item.get("source") not in (None, texts[0][k]):
                raise FairseqTreeError(f"{items}:{k + 2}: its source is not line {k + 1} of "
                                       f"{files[0]}")
            rows[k] = row_name(item)
            values[k] = item.get(f"subject_{item.get('feature') or 'number'}", "")
    return (*texts, rows, values)


def set_fingerprint(*columns: list[str]) -> str:
    """sha256 of the set's lines and rows: results of another set are never kept."""
    digest = hashlib.sha256()
    for column in columns:
        digest.update("\n".join(column).encode("utf-8") + b"\0")
    return digest.hexdigest()


def checkpoint_fingerprint(path: str) -> str:
    """sha256 of the checkpoint file: a run trained on under the same path is scored again. The
    first read of every checkpoint, so the one place a missing one is named."""
    if not Path(path).is_file():
        raise FairseqTreeError(f"{path}: no such checkpoint file")
    with open(path, "rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def kept_without_file(checkpoints: list, previous: dict, report: str | None) -> dict:
    """``--keep-missing``: the sha256 the previous report recorded for each named checkpoint whose
    file is gone. Its results are kept as they are for a file of that sha256; one the report
    never scored is an error, not a silent gap."""
    missing = {}
    for name, path in checkpoints:
        if Path(path).is_file():
            continue
        sha = previous.get("checkpoint_sha256", {}).get(name)
        if not sha or name not in previous.get("results", {}):
            where = f"no results for {name} in {report}" if report else "no --json report"
            raise FairseqTreeError(f"{path}: no such checkpoint file, and {where} to keep")
        missing[name] = sha
    return missing


def row_name(item: dict) -> str:
    """``phenomenon condition`` and ``+ attractor`` for an item that has one."""
    name = " ".join(item[key] for key in ("phenomenon", "condition") if item.get(key)) or ALL
    return name + (" + attractor" if item.get("attractor") == "1" else "")


def load_hub(checkpoint: str, recipe: str, parse: bool):
    """The checkpoint's translation hub, which parses raw sources with the recipe's parser when
    it is to ``parse`` them (the other hubs of that recipe score the trees it made)."""
    from fairseq_tree.models import Tree2SeqModel

    path = Path(checkpoint).resolve()
    if parse and not Recipe.read(recipe, kind="translation").text.parser:
        raise FairseqTreeError(f"{recipe}/recipe.json records no parser")
    return Tree2SeqModel.from_pretrained(str(path.parent), path.name, recipe=recipe)


def accuracy_table(correct: list[bool], rows: list[str], values: list[str]) -> dict:
    """Accuracy (percent) and count per row, rows in their first order, then each phenomenon's
    (and its items' by the subject's value of the agreeing feature, e.g. singular and plural: a
    model that prefers one form whatever the subject shows there) and the whole set's."""
    groups, totals = collections.defaultdict(list), collections.defaultdict(list)
    for ok, row, value in zip(correct, rows, values):
        groups[row].append(ok)
        if row != ALL:
            totals[f"{row.split()[0]} (all)"].append(ok)
            if value:
                totals[f"{row.split()[0]} ({value} subjects)"].append(ok)
    order = sorted(set(values) - {""},
                   key=lambda v: (VALUE_ORDER.index(v) if v in VALUE_ORDER else 99, v))
    for phenomenon in dict.fromkeys(row.split()[0] for row in rows if row != ALL):
        for part in ("all", *(f"{value} subjects" for value in order)):
            if f"{phenomenon} ({part})" in totals:
                groups[f"{phenomenon} ({part})"] = totals[f"{phenomenon} ({part})"]
    if len(groups) > 1:
        groups[f"{ALL} items"] = list(correct)
    return {row: {"accuracy": round(100 * sum(oks) / len(oks), 2), "count": len(oks)}
            for row, oks in groups.items()}


def score_models(checkpoints, recipes: dict, sources, references, contrasts, batch_size: int):
    """Each checkpoint's log-probabilities of references and contrasts; sources parsed once per
    recipe (by the first hub of that recipe)."""
    trees, scores = {}, {}
    for name, path in checkpoints:
        recipe = recipes[name]
        started = time.time()
        hub = load_hub(path, recipe, parse=recipe not in trees)
        if recipe not in trees:
            trees[recipe] = []
            for start in range(0, len(sources), batch_size):
                trees[recipe] += hub.parse(sources[start:start + batch_size])
            print(f"{recipe}: {len(sources)} sources parsed ({hub.flat_fallbacks} flat "
                  "fallbacks)", flush=True)
        names = [f"item {k + 1}" for k in range(len(sources))]
        scored = {}
        for side, targets in (("reference", references), ("contrast", contrasts)):
            scored[side] = []
            for start in range(0, len(sources), batch_size):
                end = start + batch_size
                scored[side] += hub.score(trees[recipe][start:end], targets[start:end],
                                          trees=True, names=names[start:end])
        scores[name] = scored
        print(f"{name}: {len(sources)} items scored in {time.time() - started:.0f} s",
              flush=True)
    return scores, trees


EARLY_STOP = "early stop since valid performance hasn't improved"


def checkpoint_record(path: str) -> dict:
    """What the checkpoint's folder says of its training and translations: the valid-loss curve
    of ``train.log`` ((epoch, updates, loss) per validation), its best point, whether the run
    stopped early (else at its --max-update), and ``test-results.json``'s BLEU."""
    folder, record = Path(path).parent, {}
    log = folder / "train.log"
    if log.is_file():
        text = log.read_text(encoding="utf-8", errors="replace")
        curve = valid_curve(text, "loss")
        if curve:
            best = min(curve, key=lambda point: point[2])
            record.update(valid_curve=[list(p) for p in curve], best_valid_loss=best[2],
                          best_valid_update=best[1], last_update=curve[-1][1],
                          stopped_early=EARLY_STOP in text)
    results = folder / "test-results.json"
    if results.is_file():
        found = json.loads(results.read_text(encoding="utf-8"))
        if found.get("checkpoint") in (None, str(Path(path).resolve())):
            record.update(sacrebleu=found.get("sacrebleu"),
                          tokenized_bleu=found.get("tokenized_bleu"))
    return record


def bleu_lines(training: dict) -> list[str]:
    """sacreBLEU and the training's end per model: mean ± sd over its seeds."""
    by_model = collections.defaultdict(list)
    for name, record in training.items():
        by_model[name.partition(":")[0]].append(record)
    lines = ["| model | sacreBLEU | best valid loss | at update | stopped early |",
             "|---|---|---|---|---|"]
    for model, records in by_model.items():
        def mean_sd(key, digits=2):
            values = [r[key] for r in records if r.get(key) is not None]
            if not values:
                return "-"
            sd = f" ± {statistics.stdev(values):.{digits}f}" if len(values) > 1 else ""
            return f"{statistics.mean(values):.{digits}f}{sd}"
        stopped = sum(bool(r.get("stopped_early")) for r in records)
        lines.append(f"| {model} ({len(records)}) | {mean_sd('sacrebleu')} | "
                     f"{mean_sd('best_valid_loss', 3)} | {mean_sd('best_valid_update', 0)} | "
                     f"{stopped} of {len(records)} |")
    return lines


def cell_table(summary: dict, baseline: str | None, tests: list[dict]) -> list[str]:
    """The seeds' summary with a row per cell and a column per model (mean ± sd), then each
    model's difference from ``baseline`` (seed-level p, and Holm's over every test)."""
    models = list(summary)
    rows = list(next(iter(summary.values())))
    tested = [m for m in models if m != baseline
              and any(summary[m][row].get(f"vs {baseline}") for row in rows)]
    by_key = {(t["system"], t["column"]): t for t in tests}
    def cell(model, row):
        return mean_sd_cell(summary[model][row])
    def test(model, row):
        t = by_key.get((model, row))
        if t is None:
            untested = summary[model][row].get(f"vs {baseline}")
            return difference_cell(untested) if untested else "-"
        return (f"{t['mean_difference']:+.2f} (p {t['p_value']:.2g}, "
                f"Holm {t['holm_p_value']:.2g})")
    seeds = {m: len(next(iter(summary[m].values()))["seeds"]) for m in models}
    lines = ["| cell (items) | " + " | ".join(f"{m} ({seeds[m]})" for m in models)
             + "".join(f" | {m} - {baseline}" for m in tested) + " |",
             "|---" * (1 + len(models) + len(tested)) + "|"]
    for row in rows:
        count = summary[models[0]][row]["count"]
        lines.append(f"| {row} ({count:,}) | " + " | ".join(cell(m, row) for m in models)
                     + "".join(f" | {test(m, row)}" for m in tested) + " |")
    return lines


def markdown_lines(report: dict, baseline: str | None = None) -> list[str]:
    """A report's tables, as ``--markdown`` writes them, from the report alone: the cells (mean
    ± sd over seeds, or one run's accuracy) with each model's tested difference from
    ``baseline`` (default: the one its command named), then sacreBLEU and the training's end."""
    baseline = baseline or command_option(report, "--baseline")
    summary = report["summary"] or {
        name: {row: {"mean": c["accuracy"], "sd": None, "count": c["count"], "seeds": [0]}
               for row, c in table.items()} for name, table in report["results"].items()}
    lines = cell_table(summary, baseline, report["paired_tests_holm"])
    if any(report["training"].values()):
        lines += [""] + bleu_lines(report["training"])
    return lines


def runs_table(report: dict) -> list[str]:
    """bench/RESULTS.md's table of where each run of a report's ``training`` stopped: early or
    at its ceiling, after how many validations, its best valid loss and sacreBLEU."""
    body = []
    for name, record in sorted(report["training"].items(),
                               key=lambda item: (list(report["summary"]).index(
                                   item[0].partition(":")[0]), item[0])):
        model, _, seed = name.partition(":")
        stopped = "early" if record.get("stopped_early") else "at its ceiling"
        body.append([model, seed, f"{stopped}, at {record['last_update']:,} "
                     f"({len(record['valid_curve'])} validations)",
                     f"{record['best_valid_loss']:.3f} ({record['best_valid_update']:,})",
                     "-" if record.get("sacrebleu") is None else f"{record['sacrebleu']:.2f}"])
    return markdown_table(["model", "seed", "stopped", "best valid loss (update)", "sacreBLEU"],
                          body)


def holm_corrected(summary: dict) -> list[dict]:
    """Every paired test of the summary (``report.agreement_t_tests``: the same ``vs BASELINE``
    entries of ``seed_summary``), with Holm's adjusted p over all of them. A difference that is
    the same for every seed (accuracies move in steps of 0.5 on 200 items, so with two or three
    seeds this happens) has no t-test (``report.paired_t_test``) and is left out."""
    return holm_family(agreement_t_tests({"summary": {"contrastive": summary}}))


def write_scores(folder: Path, scores: dict, rows: list[str], trees: dict, recipes: dict):
    folder.mkdir(parents=True, exist_ok=True)
    for name, scored in scores.items():
        lines = ["item\trow\treference\tcontrast\tcorrect\ttree"]
        tree = trees[recipes[name]]
        for k, (ref, con) in enumerate(zip(scored["reference"], scored["contrast"])):
            lines.append(f"{k + 1}\t{rows[k]}\t{ref:.4f}\t{con:.4f}\t{int(ref > con)}\t{tree[k]}")
        (folder / f"{name.replace(':', '.s')}.tsv").write_text("\n".join(lines) + "\n",
                                                               encoding="utf-8")


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", required=True, metavar="DIR", help="the contrastive set")
    parser.add_argument("--recipe", required=True, metavar="DIR",
                        help="the models' translation recipe (languages, BPE, parser)")
    parser.add_argument("--recipe-for", action="append", default=[], metavar="MODEL=DIR",
                        help="another recipe for one model (e.g. another parser's trees)")
    parser.add_argument("--checkpoint", action="append", required=True,
                        metavar="MODEL:SEED=PATH")
    parser.add_argument("--baseline", metavar="MODEL",
                        help="the model every other is tested against, seed by seed")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--scores", metavar="DIR", help="each model's scores of every item")
    parser.add_argument("--keep-missing", action="store_true",
                        help="a checkpoint whose file is gone keeps the --json report's results")
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--markdown", metavar="FILE")
    return parser


def main(argv=None) -> dict:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = get_parser()
    args = parser.parse_args(argv)
    checkpoints = named_values(parser, "--checkpoint", "NAME=PATH or MODEL:SEED=PATH",
                               args.checkpoint)
    overrides = dict(spec.partition("=")[::2] for spec in args.recipe_for)
    recipes = {name: os.path.abspath(overrides.get(name.partition(":")[0], args.recipe))
               for name, _ in checkpoints}
    previous = previous_report(args.json)
    try:
        missing = kept_without_file(checkpoints, previous, args.json) if args.keep_missing else {}
        fingerprints = {name: missing.get(name) or checkpoint_fingerprint(path)
                        for name, path in checkpoints}
        for name in missing:
            print(f"{name}: kept from {args.json}, its checkpoint file gone", file=sys.stderr)
        kept = {name: table for name, table in previous.get("results", {}).items()
                if previous.get("set_fingerprint") and name in fingerprints
                and previous.get("checkpoint_sha256", {}).get(name) == fingerprints[name]}
        record = Recipe.read(args.recipe, kind="translation")
        sources, references, contrasts, rows, values = read_set(Path(args.set), record.src,
                                                        record.tgt)
        fingerprint = set_fingerprint(sources, references, contrasts, rows, values)
        if previous.get("set_fingerprint") != fingerprint:
            if missing:
                raise FairseqTreeError(f"{args.set}: not the set {args.json} was scored on, so "
                                       f"{', '.join(missing)} (no checkpoint file) cannot be kept")
            kept = {}
        scores, trees = score_models([(n, p) for n, p in checkpoints if n not in kept], recipes,
                                     sources, references, contrasts, args.batch_size)
    except (FairseqTreeError, ParserUnavailable, OSError) as err:
        sys.exit(f"contrastive.py: error: {err}")
    results = {name: kept.get(name) or accuracy_table(
        [r > c for r, c in zip(scores[name]["reference"], scores[name]["contrast"])], rows, values)
        for name, _ in checkpoints}
    seeded = all(":" in name for name in results)
    summary = seed_summary(results, args.baseline) if seeded else None
    training = {name: previous.get("training", {}).get(name, {}) if name in missing
                else checkpoint_record(path) for name, path in checkpoints}
    tests = holm_corrected(summary) if seeded else []
    if args.scores:
        write_scores(Path(args.scores), scores, rows, trees, recipes)
    report = {"benchmark": "contrastive translation scoring: reference above contrast",
              "command": " ".join(["bench/contrastive.py", *argv]), "machine": machine(),
              "date": time.strftime("%Y-%m-%d"), "set": args.set,
              "set_fingerprint": fingerprint, "scored_in_this_call": sorted(scores),
              "checkpoints": dict(checkpoints), "checkpoint_sha256": fingerprints,
              "kept_without_file": sorted(missing),
              "recipes": recipes, "results": results,
              "summary": summary, "training": training,
              "paired_tests_holm": tests}
    lines = markdown_lines(report, args.baseline)
    if args.markdown:
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(args.markdown).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return end_report(report, lines, args.json)


if __name__ == "__main__":
    main()
