"""Targeted agreement evaluation with gold labels (Marvin & Linzen 2018): each model's accuracy
on prefixes made from templates, by syntactic condition, with and without an attractor; chance is
50% in every cell, whose items are half singular and half plural by construction.

    python -m bench.agreement_targeted --data data/agreement \\
        --checkpoint tree_classifier:1=checkpoints/agreement/tree_classifier-1/checkpoint_best.pt \\
        --checkpoint roberta:1=checkpoints/agreement/roberta-1/checkpoint_best.pt ... \\
        --items bench/results/agreement-targeted.tsv --json bench/results/agreement-targeted.json \\
        --markdown agreement-targeted.md   # bench/RESULTS.md: targeted_table

The items (``bench.tasks.agreement_templates``: the formats of ``--templates`` and
``--words``; ``agreement_defaults``: the built-in conditions and lists, the default, which
``--write-defaults DIR`` writes as files to start from) are drawn from the word lists' entries
whose every form occurs ``--min-count`` times or more in the recipe's training text
(``text/train.tok``), so the models know the words; the report lists the entries left out as
rare. ``--items`` writes them as
TSV, and ``--items-from`` reads such a file instead of making them: the same items for models
of recipes whose training text differs. Each model reads them as raw text through the
classification hub, as a user's sentences:
parsed by the recipe's PARSER, split into the recipe's subwords and binarized with the model's
dictionaries.

Rows: each condition without and with an attractor (``pp``, ``pp + attractor``), and the same
by template in the report's ``templates``. References: chance (50%), the majority class of the
training examples with noun subjects, and "last noun" (Linzen et al.'s heuristic: the number of
the last noun of the prefix, known from its template). Name checkpoints ``MODEL:SEED`` for each
model's mean ± sd over its seeds (``bench/lib/report.py``'s ``seed_summary``; with ``--baseline
MODEL`` the paired t-tests against it).

Where a model is below chance, what it read: ``--predictions`` writes each item with the tree
the hub parsed it into (before BPE) and each model's class and probability of plural, and the
report's ``tree_shapes`` gives, per template and cell, the commonest shapes of those trees
(labels and tags kept, words as ``_``): a parse that puts the attractor where the subject
belongs shows there.
"""

import argparse
import collections
import re
import sys
import time
from pathlib import Path

from bench.lib.agreement_recipe import VIEW, majority_classes, read_lines, read_meta, recipe_folder
from bench.lib.model_names import model_name, model_rank
from bench.lib.named_options import named_values
from bench.lib.report import (command_option, difference_cell, end_report, holm_tests, machine,
                              mean_sd_cell, seed_summary)
from bench.lib.report import markdown_table as report_markdown_table

from fairseq_tree.errors import FairseqTreeError
from bench.tasks import agreement_defaults
from fairseq_tree.trees.agreement import PLURAL, SINGULAR
from bench.tasks.agreement_templates import (
    ITEM_COLUMNS,
    Item,
    cell_name,
    conditions,
    format_items,
    frequent_words,
    generate,
    read_items,
    read_templates,
    read_words,
    token_counts,
)

CHANCE = 50.0


def accuracy_rows(items: list[Item], predictions: list[str], key) -> dict:
    """Accuracy (%) and count of the items of each row ``key(item)`` names, in item order."""
    rows: dict = {}
    for item, prediction in zip(items, predictions, strict=True):
        rows.setdefault(key(item), []).append(prediction == item.label)
    return {row: {"accuracy": round(100 * sum(right) / len(right), 2), "count": len(right)}
            for row, right in rows.items()}


def by_cell(item: Item) -> str:
    return cell_name(item.condition, item.attractor)


def by_template(item: Item) -> str:
    return cell_name(item.template, item.attractor)


def reference_predictions(items: list[Item], majority: str) -> dict[str, list[str]]:
    """What the majority class of the training's noun-subject examples and the last noun of the
    prefix predict (the majority class where a template has no noun slot)."""
    return {"majority class": [majority] * len(items),
            "last noun": [item.last_noun or majority for item in items]}


def cell_counts(items: list[Item]) -> dict:
    """Per cell: items, singular and plural subjects, distinct prefixes."""
    counts: dict = {}
    for item in items:
        cell = counts.setdefault(by_cell(item), {"items": 0, "singular": 0, "plural": 0,
                                                  "distinct": set()})
        cell["items"] += 1
        cell["singular" if item.label == SINGULAR else "plural"] += 1
        cell["distinct"].add(item.prefix)
    return {row: {**cell, "distinct": len(cell["distinct"])} for row, cell in counts.items()}


def markdown_table(results: dict, summary: dict, first: str) -> list[str]:
    """Rows of ``results``' first system (conditions or templates by cell), columns: items,
    chance, the references, then each model: mean ± sd over its seeds (MODEL:SEED names), or
    the accuracy of a checkpoint named without a seed."""
    single = [name for name in results if ":" not in name]
    references = [name for name in single if name in ("majority class", "last noun")]
    models = [name for name in single if name not in references]
    rows = list(next(iter(results.values())))
    seeds = {model: len(next(iter(cells.values()))["seeds"]) for model, cells in summary.items()}
    columns = [first, "items", "chance", *references, *models,
               *(f"{m} ({n} seed{'' if n == 1 else 's'})" for m, n in seeds.items())]
    lines = ["| " + " | ".join(columns) + " |", "|---" * len(columns) + "|"]
    for row in rows:
        count = results[references[0]][row]["count"]
        cells = ([f"{results[name][row]['accuracy']:.2f}" for name in references + models]
                 + [mean_sd_cell(summary[model][row]) for model in summary])
        lines.append(f"| {row} | {count} | {CHANCE:.2f} | " + " | ".join(cells) + " |")
    return lines


def targeted_table(report: dict, tests: bool = True) -> list[str]:
    """bench/RESULTS.md's tables of a stored report: ``markdown_table`` of its conditions with
    the models named as RESULTS names them, then (``tests``) each model's seed-level paired
    difference from the baseline, with its p and Holm's adjusted p over all the report's tests
    (a difference with no spread has no test and is not in the family)."""
    order = sorted(report["summary"], key=model_rank)
    summary = {model_name(model): report["summary"][model] for model in order}
    lines = markdown_table(report["results"], summary, "condition")
    baseline = command_option(report, "--baseline")
    key = f"vs {baseline}"
    tested = [model for model in order
              if any(key in cell for cell in report["summary"][model].values())]
    if not tests or not tested:
        return lines
    adjusted = holm_tests({"summary": {"targeted": report["summary"]}})
    def cell(model, row):
        test = report["summary"][model][row].get(key)
        if test is None:
            return "-"
        text = difference_cell(test)
        where = ("targeted", model, row)
        return text[:-1] + f", Holm {adjusted[where]:.2g})" if where in adjusted else text
    rows = list(report["results"]["majority class"])
    return lines + [""] + report_markdown_table(
        [f"vs {model_name(baseline)}: difference (p, Holm over the report's {len(adjusted)} "
         "tests)", *(model_name(model) for model in tested)],
        [[row, *(cell(model, row) for model in tested)] for row in rows])


def load_hub(checkpoint: str, data: Path):
    """The classification hub of ``checkpoint``, reading raw text as the recipe at ``data`` made
    its training trees (``classification_hub.from_pretrained(recipe=...)``: the recipe's
    tokenization, parser, BPE codes and data-bin)."""
    from fairseq_tree.classification_hub import from_pretrained

    path = Path(checkpoint)
    return from_pretrained(str(path.parent), path.name, recipe=str(data))


def hub_predictions(hub, prefixes: list[str], names: list[str]) -> tuple[list[str], list[float]]:
    """The class the hub predicts for each raw prefix, and the probability of plural."""
    predictions = hub.predict(prefixes, names=names)
    return ([p.label for p in predictions],
            [round(p.probabilities[PLURAL], 4) for p in predictions])


def input_trees(hub, prefixes: list[str], names: list[str]) -> list[str]:
    """Each prefix's tree as the hub parses it (before BPE): the trees the models read."""
    return [tree for tree, _ in hub.bracketed(prefixes, False, names)]


def tree_shape(tree: str) -> str:
    """A bracketed tree with its words replaced by ``_`` (labels and tags kept): what the parser
    made of a template, whatever words filled it."""
    out, previous = [], ""
    for token in re.findall(r"\(|\)|[^()\s]+", tree):
        word = token not in "()" and previous != "("
        out.append(("" if previous in ("(", "") or token == ")" else " ")
                   + ("_" if word else token))
        previous = token
    return "".join(out)


def tree_shapes(items: list[Item], trees: list[str], top: int = 3) -> dict:
    """Per template and cell: how many distinct tree shapes its items got, and the ``top``
    commonest with their counts (where a model is below chance, the trees it read there)."""
    shapes: dict = {}
    for item, tree in zip(items, trees, strict=True):
        shapes.setdefault(by_template(item), collections.Counter())[tree_shape(tree)] += 1
    return {row: {"distinct": len(counts),
                  "commonest": [[shape, n] for shape, n in counts.most_common(top)]}
            for row, counts in shapes.items()}


def word_lists(args) -> tuple:
    """The templates and the word lists (``--templates``, ``--words`` or the built-in ones), the
    words filtered by their counts in the recipe's training text, and the entries dropped."""
    def read(path: Path | None, default: str, reader, what: str):
        if path is None:
            return reader(default, f"<built-in {what}>")
        if not path.is_file():
            sys.exit(f"agreement_targeted.py: error: {path}: no such file")
        return reader(path.read_text(encoding="utf-8"), str(path))

    templates = read(args.templates, agreement_defaults.TEMPLATES, read_templates, "templates")
    words = read(args.words, agreement_defaults.WORDS, read_words, "words")
    counts = token_counts(read_lines(args.data / "text" / "train.tok"))
    kept, dropped = frequent_words(words, counts, args.min_count)
    return templates, words, kept, dropped


def dropped_lines(dropped: dict, min_count: int) -> list[str]:
    """One line a class of the word list entries left out as rare, with their forms' counts."""
    return [f"{word_class}: fewer than {min_count} in text/train.tok, left out: " + ", ".join(
        " / ".join(f"{form} {count}" for form, count in entry.items()) for entry in entries)
        for word_class, entries in dropped.items()]


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path,
                        help="the agreement recipe's folder (holding recipe.json, text/ and "
                             "data-bin/agreement/), or the DATA folder above it")
    parser.add_argument("--checkpoint", action="append", default=[], metavar="NAME=PATH",
                        help="a trained model; NAME MODEL:SEED for seeds (repeatable)")
    parser.add_argument("--baseline", metavar="MODEL",
                        help="with MODEL:SEED names: the model the others are tested against")
    parser.add_argument("--templates", type=Path, help="a template file (default: built-in)")
    parser.add_argument("--words", type=Path, help="a word list file (default: built-in)")
    parser.add_argument("--per-cell", type=int, default=300,
                        help="items in each condition's cell, with and without an attractor "
                             "(even; default 300)")
    parser.add_argument("--seed", type=int, default=1, help="the items' seed (default 1)")
    parser.add_argument("--min-count", type=int, default=20,
                        help="a word list entry is used if each of its forms occurs this often "
                             "in text/train.tok (default 20)")
    parser.add_argument("--no-capitalize", dest="capitalize", action="store_false",
                        help="leave the first word lowercase (default: capitalized, as the "
                             "training prefixes start sentences)")
    parser.add_argument("--items", type=Path, help="write the items here (TSV)")
    parser.add_argument("--items-from", type=Path, metavar="TSV",
                        help="read the items from a file --items wrote, instead of making them "
                             "(the same items for models of other recipes)")
    parser.add_argument("--predictions", type=Path,
                        help="write the items here (TSV) with the tree the models read and "
                             "each model's class and probability of plural")
    parser.add_argument("--json", help="write the report here")
    parser.add_argument("--markdown", type=Path, help="write the Markdown tables here")
    parser.add_argument("--write-defaults", type=Path, metavar="DIR",
                        help="write the built-in templates.txt and words.txt to DIR and stop")
    return parser


def write_defaults(folder: Path):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "templates.txt").write_text(agreement_defaults.TEMPLATES, encoding="utf-8")
    (folder / "words.txt").write_text(agreement_defaults.WORDS, encoding="utf-8")
    print(f"{folder / 'templates.txt'}\n{folder / 'words.txt'}")


def make_items(args) -> tuple:
    """The items, and the word lists' report: sizes listed and kept, entries dropped as rare
    (with ``--items-from``, the file's items and no report)."""
    if args.items_from:
        try:
            items = read_items(args.items_from.read_text(encoding="utf-8"), str(args.items_from))
        except (FairseqTreeError, OSError) as err:
            sys.exit(f"agreement_targeted.py: error: {err}")
        order = list(dict.fromkeys(item.condition for item in items))
        return items, order, {"words": None, "dropped_as_rare": None}
    try:
        templates, words, kept, dropped = word_lists(args)
        for line in dropped_lines(dropped, args.min_count):
            print(line, flush=True)
        items = generate(templates, kept, args.per_cell, args.seed, args.capitalize)
    except FairseqTreeError as err:
        sys.exit(f"agreement_targeted.py: error: {err}")
    if args.items:
        args.items.parent.mkdir(parents=True, exist_ok=True)
        args.items.write_text(format_items(items), encoding="utf-8")
    sizes = {word_class: {"listed": len(entries), "kept": len(kept.classes.get(word_class, []))}
             for word_class, entries in words.classes.items()}
    return items, conditions(templates), {"words": sizes, "dropped_as_rare": dropped}


def run_models(checkpoints: list[tuple[str, str]], data: Path, items: list[Item], names,
               load) -> tuple[dict, dict, list[str] | None]:
    """Each checkpoint's classes and probabilities of plural for the items, and the trees the
    first one's hub read (None without checkpoints)."""
    prefixes = [item.prefix for item in items]
    classes, plural, trees = {}, {}, None
    for name, path in checkpoints:
        try:
            hub = load(path, data)
            classes[name], plural[name] = hub_predictions(hub, prefixes, names)
            if trees is None:
                trees = input_trees(hub, prefixes, names)
        except (FairseqTreeError, FileNotFoundError) as err:
            sys.exit(f"agreement_targeted.py: error: {name}: {err}")
        print(f"{name}: {len(prefixes)} items classified", flush=True)
    return classes, plural, trees


def write_predictions(path: Path, items: list[Item], trees: list[str] | None, classes: dict,
                      plural: dict):
    """The items as TSV with the tree the models read and each model's class and P(plural)."""
    header = [*ITEM_COLUMNS, "tree", *(f"{n}\t{n} P(1)" for n in classes)]
    rows = format_items(items).splitlines()[1:]
    lines = ["\t".join(header)]
    for k, row in enumerate(rows):
        cells = [row, trees[k] if trees else "-"]
        cells += [f"{classes[n][k]}\t{plural[n][k]}" for n in classes]
        lines.append("\t".join(cells))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def item_names(args, count: int) -> list[str]:
    """How errors name an item: its line in --items, or its number."""
    if args.items_from or args.items:
        return [f"{args.items_from or args.items}:{k + 2}" for k in range(count)]
    return [f"item {k + 1}" for k in range(count)]


def main(argv=None, load=load_hub) -> dict:
    """The evaluation; ``load(checkpoint, data)`` gives a checkpoint's classification hub."""
    parser = get_parser()
    args = parser.parse_args(argv)
    if args.write_defaults:
        write_defaults(args.write_defaults)
        return {}
    if args.data is None:
        parser.error("--data is required")
    args.data = recipe_folder(args.data)
    checkpoints = named_values(parser, "--checkpoint", "NAME=PATH or MODEL:SEED=PATH",
                               args.checkpoint)
    items, condition_order, word_report = make_items(args)
    majority = majority_classes(read_lines(args.data / "views" / VIEW / "train.label"),
                                read_meta(args.data / "views" / VIEW / "train.meta"))
    majority = majority.get("noun", majority[""])
    classes, plural, trees = run_models(checkpoints, args.data, items,
                                        item_names(args, len(items)), load)
    systems = {**reference_predictions(items, majority), **classes}
    results = {name: accuracy_rows(items, guesses, by_cell) for name, guesses in systems.items()}
    by_templates = {name: accuracy_rows(items, guesses, by_template)
                    for name, guesses in systems.items()}
    summary = seed_summary(results, args.baseline)
    lines = (markdown_table(results, summary, "condition") + [""]
             + markdown_table(by_templates, seed_summary(by_templates, None), "template"))
    if args.predictions:
        write_predictions(args.predictions, items, trees, classes, plural)
    report = {
        "benchmark": "targeted subject-verb agreement (Marvin & Linzen 2018)",
        "command": " ".join(["bench/agreement_targeted.py", *(argv or sys.argv[1:])]),
        "machine": machine(), "date": time.strftime("%Y-%m-%d"), "data": str(args.data),
        "checkpoints": dict(checkpoints),
        "settings": {"templates": str(args.templates or "built-in"),
                     "words": str(args.words or "built-in"), "per_cell": args.per_cell,
                     "seed": args.seed, "min_count": args.min_count,
                     "capitalize": args.capitalize, "items": str(args.items or ""),
                     "items_from": str(args.items_from or "")},
        "conditions": condition_order, **word_report, "cells": cell_counts(items),
        "majority_class": majority, "chance": CHANCE, "results": results,
        "templates": by_templates, "summary": summary,
        "tree_shapes": tree_shapes(items, trees) if trees else None,
        "predictions": {name: "".join(guesses) for name, guesses in classes.items()}}
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return end_report(report, lines, args.json)


if __name__ == "__main__":
    main()
