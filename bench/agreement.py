"""Agreement accuracy overall and by number of attractors, as Linzen et al. (2016) and the
paper's SVA row report it, for trained models and the two baselines that show what the task
measures: the majority class of the training examples (per subject kind: nouns and pronouns
differ), and "agree with the most recent noun" (Linzen et al.'s heuristic).

    python -m bench.agreement --data data/agreement --split test --split test1 \\
        --checkpoint tree_classifier=checkpoints/agreement/tree_classifier/checkpoint_best.pt \\
        --checkpoint roberta=checkpoints/agreement/roberta/checkpoint_best.pt \\
        --json bench/results/agreement.json

``--data`` is a folder of data-prep/prepare-agreement.sh: its data-bin/agreement/ and, beside
each split, {split}.meta (``fairseq_tree.trees.agreement.AGREEMENT_META``: subject kind, attractors,
the class of the nearest noun, ...). Each model predicts every example of a split (the
checkpoint's own task and options, no dropout); rows: every example, the noun-subject examples
and those by attractors (0, 1, 2, 3, 4+), the pronoun-subject examples apart (their number is in
the pronoun: trivial), and, in a split that has them, the lowercase "i" subjects of informal text
(``subject "i"``: the word read from the recipe's text/{split}.tok). Each row gives the accuracy and the count. The overall accuracy is
fairseq-validate's for the same checkpoint and split.

Seeds: name checkpoints ``MODEL:SEED`` (``--checkpoint roberta:1=...``); the report's
``summary`` then gives each model's mean ± sd over its seeds for every row, and with
``--baseline MODEL`` the seed-level paired t-test of every other model against it on every row
(``bench/lib/report.py``; the seeds both have).

``--data-of MODEL=DATA``: MODEL's checkpoints read each split from DATA, another recipe folder
made from the same examples with other input trees (``PARSER=link-grammar`` or ``flat`` beside
``spacy``), whose labels and meta must be --data's. So roberta, which reads the leaves alone and
was trained on one folder's dictionaries, is the baseline of the tree models of every folder.

``--results NAME=REPORT``: NAME's rows taken from an earlier report of this script (its
``splits``), not recomputed, so runs scored one at a time, whose checkpoints need not be kept,
make one table. ``NAME=REPORT#STORED`` takes the rows the report holds as STORED under NAME, so
one model's runs on several tree sources can be told apart (``rta@flat:1=...#rta:1``) and one
source be the baseline of the others. The report must hold every split asked for, on the same
examples: each report records a fingerprint of each split's labels and meta (``examples``),
which must match; a report made before fingerprints were recorded must match every row's count.

``--by-nearest-verb``: two more rows of the noun subjects, by the number of the present-tense
verb nearest before the verb in the prefix as the recipe parsed it (its trees/{split}.conllu):
the same as the label's (``nearest verb of the same number``: copying that verb's number is
right) or the other (``nearest verb of the other number``: "you know that no murderer *has*",
where copying it is wrong; ``fairseq_tree.trees.agreement``'s contrast copies).
"""

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import torch

from fairseq_tree.trees.agreement import Word, attractor_bin, last_verb_number
from bench.lib.agreement_recipe import VIEW, majority_classes, read_lines, read_meta, recipe_folder
from bench.lib.model_names import model_name, model_rank
from bench.lib.named_options import named_values
from bench.lib.report import (
    command_option,
    difference_cell,
    holm_tests,
    machine,
    markdown_table,
    mean_sd_cell,
    seed_summary,
    write_json,
)


LOWERCASE_I = 'subject "i"'  # informal text's first person, which edited text writes "I"
NEAREST_VERB_ROWS = {True: "nearest verb of the same number",
                     False: "nearest verb of the other number"}


def breakdown(predictions: list[str], labels: list[str], meta: list[dict],
              subjects: list[str] | None = None, nearest: list[str | None] | None = None) -> dict:
    """Accuracy (%) and count of every row: all, noun subjects, by attractors, pronouns; with
    the subjects' words (``subjects``), the lowercase "i" subjects too, where there are any;
    with each example's nearest present-tense verb's number (``nearest``), the noun subjects
    by whether it is the label's (``NEAREST_VERB_ROWS``)."""
    groups = {"all": [], "noun subjects": [], "pronoun subjects": []}
    for k, (prediction, label, row) in enumerate(zip(predictions, labels, meta, strict=True)):
        right = prediction == label
        groups["all"].append(right)
        groups[f"{row['subject_kind']} subjects"].append(right)
        if row["subject_kind"] == "noun":
            groups.setdefault(f"attractors {attractor_bin(int(row['attractors']))}", []).append(
                right)
            if nearest is not None and nearest[k] is not None:
                groups.setdefault(NEAREST_VERB_ROWS[nearest[k] == label], []).append(right)
        elif subjects is not None and subjects[k] == "i":
            groups.setdefault(LOWERCASE_I, []).append(right)
    order = ["all", "noun subjects", *(f"attractors {b}" for b in ("0", "1", "2", "3", "4+")),
             *(NEAREST_VERB_ROWS.values() if nearest is not None else ()),
             "pronoun subjects", *([LOWERCASE_I] if groups.get(LOWERCASE_I) else [])]
    return {name: {"accuracy": round(100 * sum(groups[name]) / len(groups[name]), 2)
                   if groups.get(name) else None, "count": len(groups.get(name, []))}
            for name in order}


def subject_words(folder: Path, split: str, meta: list[dict]) -> list[str] | None:
    """Each example's subject as written (text/{split}.tok's word at the .meta's subject
    position); None where the recipe folder has no text/ (a copy of its data-bin alone)."""
    path = folder / "text" / f"{split}.tok"
    if not path.is_file():
        return None
    lines = read_lines(path)
    if len(lines) != len(meta):
        sys.exit(f"agreement.py: error: {path}: {len(lines)} lines, but the split has "
                 f"{len(meta)} examples")
    return [line.split()[int(row["subject"])] for line, row in zip(lines, meta)]


def nearest_verb_numbers(folder: Path, split: str, count: int) -> list[str | None]:
    """Each example's nearest present-tense verb's number (VBZ singular, VBP plural; None: no
    such verb), from the tags of the prefix's parse (the recipe's trees/{split}.conllu)."""
    path = folder / "trees" / f"{split}.conllu"
    if not path.is_file():
        sys.exit(f"agreement.py: error: {path}: no such file (--by-nearest-verb reads the "
                 "recipe's parses)")
    numbers = []
    for sentence in path.read_text(encoding="utf-8").strip().split("\n\n"):
        words = [Word(fields[1], fields[4], -1, "") for fields in
                 (line.split("\t") for line in sentence.splitlines() if line[:1].isdigit())]
        numbers.append(last_verb_number(words, len(words)))
    if len(numbers) != count:
        sys.exit(f"agreement.py: error: {path}: {len(numbers)} sentences, but the split has "
                 f"{count} examples")
    return numbers


def examples_fingerprint(label_path: Path, meta_path: Path) -> str:
    """sha256 of a split's label and meta files: two reports with the same one scored the same
    examples in the same order."""
    digest = hashlib.sha256()
    for path in (label_path, meta_path):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def stored_results(name: str, path: str, split: str, fingerprint: str, counts: dict) -> dict:
    """System ``name``'s rows on ``split`` from the report at ``path`` (``REPORT#STORED``: the
    rows stored as STORED), after checking that it scored the same examples (``fingerprint``, or
    each row's count in ``counts`` for a report that records no fingerprint)."""
    path, _, stored = path.partition("#")
    name = stored or name
    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
        table = report["splits"][split][name]
    except FileNotFoundError:
        sys.exit(f"agreement.py: error: {path}: no such report")
    except (json.JSONDecodeError, KeyError, TypeError):
        sys.exit(f"agreement.py: error: {path}: no results of {name!r} on {split} "
                 "(not a report of bench/agreement.py?)")
    theirs = report.get("examples", {}).get(split)
    if theirs is not None and theirs != fingerprint:
        sys.exit(f"agreement.py: error: {path}: scored other examples of {split} than "
                 f"--data's (fingerprint {theirs[:12]}, here {fingerprint[:12]})")
    if theirs is None:
        wrong = [row for row, cell in counts.items() if table.get(row, {}).get("count") != cell]
        if wrong:
            sys.exit(f"agreement.py: error: {path}: {name!r} on {split} has other counts than "
                     f"--data's (row {wrong[0]!r}): not the same examples")
    return table


def same_examples(folder: Path, data: Path, split: str):
    """Exit with an error unless ``folder``'s ``split`` holds ``data``'s examples: the same
    labels and meta, line by line."""
    for name, read in (("views/agreement/{}.label", read_lines),
                       ("data-bin/agreement/{}.meta", read_meta)):
        path = name.format(split)
        theirs, ours = read(folder / path), read(data / path)
        if theirs != ours:
            line = next((i for i, (a, b) in enumerate(zip(theirs, ours), 1) if a != b),
                        min(len(theirs), len(ours)) + 1)
            sys.exit(f"agreement.py: error: {folder / path}:{line}: differs from "
                     f"{data / path}:{line}: not the same examples")


@torch.no_grad()
def model_predictions(checkpoint: str, data_bin: Path, split: str) -> list[str]:
    """The class symbol the checkpoint predicts for each example of ``split``, in file order."""
    import fairseq_tree  # noqa: F401  (registers the task and models; weights-only loading)
    from fairseq import checkpoint_utils, utils

    if not os.path.isfile(checkpoint):
        sys.exit(f"agreement.py: error: {checkpoint}: no such checkpoint")
    (model,), _, task = checkpoint_utils.load_model_ensemble_and_task(
        [checkpoint], arg_overrides={"data": str(data_bin)})
    model.eval()
    task.load_dataset(split)
    dataset = task.dataset(split)
    batches = task.get_batch_iterator(
        dataset=dataset, max_tokens=8192, seed=1, num_workers=0,
        max_positions=utils.resolve_max_positions(task.max_positions(), model.max_positions()),
    ).next_epoch_itr(shuffle=False)
    labels = task.label_dictionary
    predicted: list[str | None] = [None] * len(dataset)
    for sample in batches:
        logits, _ = model(**sample["net_input"], features_only=True,
                          classification_head_name=task.cfg.classification_head_name)
        for index, guess in zip(sample["id"].tolist(), logits.argmax(-1).tolist()):
            predicted[index] = labels[guess + labels.nspecial]
    missing = predicted.count(None)
    if missing:
        sys.exit(f"agreement.py: error: {checkpoint}: {missing} examples of {split} were not "
                 "predicted (longer than the model accepts?)")
    return predicted


def baselines(majority: dict[str, str], meta: list[dict]) -> dict[str, list[str]]:
    """What the majority class of the example's subject kind and the most recent noun predict;
    an example with no noun before the verb gets its kind's majority class."""
    by_kind = [majority.get(row["subject_kind"], majority[""]) for row in meta]
    return {"majority class": by_kind,
            "most recent noun": [row["last_noun"] if row["last_noun"] != "-" else guess
                                 for row, guess in zip(meta, by_kind)]}


def markdown_tables(summary: dict, baseline: str | None) -> list[str]:
    """The seeds' summary as bench/RESULTS.md shows it: mean ± sd of every row that has
    examples, then the paired test of each model against ``baseline`` (mean difference, p)."""
    counts = {row: cell["count"] for row, cell in next(iter(summary.values())).items()}
    rows = [row for row, count in counts.items() if count]
    def header(first):
        return [f"| {first} | " + " | ".join(f"{row} ({counts[row]:,})" for row in rows) + " |",
            "|---" * (len(rows) + 1) + "|"]
    def seeds(run):
        return f"{len(run)} seed{'' if len(run) == 1 else 's'}"
    lines = header("mean ± sd over seeds") + [
        f"| {model} ({seeds(cells[rows[0]]['seeds'])}) | "
        + " | ".join(mean_sd_cell(cells[row]) for row in rows) + " |"
        for model, cells in summary.items()]
    tested = [(model, cells) for model, cells in summary.items()
              if any(f"vs {baseline}" in cells[row] for row in rows)]
    if tested:
        lines += [""] + header(f"vs {baseline}: difference (p)")
        for model, cells in tested:
            tests = [cells[row].get(f"vs {baseline}") for row in rows]
            lines.append(f"| {model} | " + " | ".join(
                "-" if t is None else difference_cell(t)
                for t in tests) + " |")
    return lines


REFERENCES = ("majority class", "most recent noun")


def attractor_table(report: dict, split: str = "test", references: bool = True,
                    holm_family: bool = True) -> list[str]:
    """bench/RESULTS.md's tables of a report's ``split``: each model's mean ± sd over its seeds
    for every row with examples (the header gives the counts), the two references without
    training (``references``), then each model's seed-level paired difference from the report's
    baseline with its p and Holm's adjusted p over every test of the report that has a p-value
    (all its splits: ``bench.lib.report --holm``'s family)."""
    summary = report["summary"][split]
    baseline = command_option(report, "--baseline")
    models = sorted(summary, key=model_rank)
    counts = {row: cell["count"] for row, cell in summary[models[0]].items()}
    rows = [row for row, count in counts.items() if count]
    seeds = {len(cells[rows[0]]["seeds"]) for cells in summary.values()}
    title = ("one seed" if seeds == {1} else f"mean ± sd over {seeds.pop()} seeds"
             if len(seeds) == 1 else "mean ± sd over seeds")
    body = [[model_name(model), *(mean_sd_cell(summary[model][row]) for row in rows)]
            for model in models]
    if references:
        body += [[name, *("-" if report["splits"][split][name][row]["accuracy"] is None else
                          f"{report['splits'][split][name][row]['accuracy']:.2f}" for row in rows)]
                 for name in REFERENCES]
    lines = markdown_table([split_name(split, title), *(f"{row} ({counts[row]:,})" for row in rows)],
                           body)
    key = f"vs {baseline}"
    tested = [model for model in models if any(key in summary[model][row] for row in rows)]
    if not tested:
        return lines
    adjusted = holm_tests(report) if holm_family else {}
    columns = rows
    def cell(model, row):
        test = summary[model][row].get(key)
        if test is None:
            return "-"
        text = difference_cell(test)
        if (split, model, row) in adjusted:
            text = text[:-1] + f", Holm {adjusted[split, model, row]:.2g})"
        return text
    what = "difference (p" + (f", Holm over the report's {len(adjusted)} tests)" if holm_family
                               else ")")
    return lines + [""] + markdown_table(
        [f"vs {model_name(baseline)}: {what}", *(f"{row} ({counts[row]:,})" for row in columns)],
        [[model_name(model), *(cell(model, row) for row in columns)] for model in tested])


def examples_table(recipe: dict, splits: list | None = None) -> list[str]:
    """bench/RESULTS.md's table of a recipe's examples (``recipe.json``'s ``stats``, written by
    data-prep/prepare-agreement.sh): per split, the examples, noun subjects by number and by
    attractors, pronoun subjects; and the made coordinations (``--coordination-examples``),
    past-tense examples (``--past-tense-examples``) and contrast copies (``--contrast-copies``)
    among them where a split has some."""
    stats = recipe["stats"]
    splits = splits or [split for split in ("train", "valid", "test", "test1", "test2")
                        if split in stats]
    bins = list(stats[splits[0]]["noun subjects by attractors"])
    extra = [key for key in EXTRA_COLUMNS if any(key in stats[split] for split in splits)]
    body = []
    for split in splits:
        row = stats[split]
        singular, plural = row["noun subjects by class"].values()
        body.append([split, f"{row['examples']:,}",
                     f"{row['noun subjects']:,} ({singular:,} / {plural:,})",
                     f"{row['pronoun subjects']:,}",
                     " / ".join(f"{n:,}" for n in row["noun subjects by attractors"].values())]
                    + [f"{row.get(key, 0):,}" for key in extra])
    return markdown_table(["split", "examples", "noun subjects (singular / plural)",
                           "pronoun subjects", "noun subjects by attractors " + " / ".join(bins)]
                          + [EXTRA_COLUMNS[key] for key in extra], body)


# The examples table's columns of the counts that only some recipes make.
EXTRA_COLUMNS = {"coordinations made": "of them made coordinations",
                 "past-tense examples": "of them past-tense",
                 "contrast copies": "of them contrast copies"}


def percent(rate: float) -> str:
    return f"{100 * rate:.2f}%" if rate == 0 or 100 * rate >= 0.01 else f"{100 * rate:.1g}%"


def unknown_units_table(recipe: dict, recipes: str, other: str,
                        other_name: str = "test1 (NYT)") -> list[str]:
    """bench/RESULTS.md's table of the units missing from the dictionary (``recipe.json``'s
    ``stats.unknown_rates``) by number of BPE merges: a row per recipe that the glob ``recipes``
    names (``recipe`` is one of them), the valid, test and test1 splits, and the test1 of the
    recipe ``other`` (another held-out text) in the row of its number of merges."""
    root = Path(__file__).resolve().parents[1]
    def load(path):
        return json.loads(path.read_text(encoding="utf-8"))
    found = sorted((load(path) for path in root.glob(recipes)), key=lambda r: r["bpe_merges"])
    extra = load(root / other)
    body = []
    for row in found:
        rates = row["stats"]["unknown_rates"]
        body.append([f"{row['bpe_merges']:,}", *(percent(rates[split]["unknown_rate"])
                                                 if split in rates else "-"
                                                 for split in ("valid", "test", "test1")),
                     percent(extra["stats"]["unknown_rates"]["test1"]["unknown_rate"])
                     if extra["bpe_merges"] == row["bpe_merges"] else "-"])
    return markdown_table(["BPE merges", "valid", "test", "test1 (RT snippets)", other_name], body)


# The recipes table's columns: (split, row of bench.agreement's reports, header), then the
# targeted conditions (bench.agreement_targeted's reports).
RECIPE_COLUMNS = [("valid", "noun subjects", "valid: noun subjects"),
                  ("test", "noun subjects", "Bible test: noun subjects"),
                  ("test", "attractors 1", "Bible test: one attractor"),
                  ("test5", "noun subjects", "Bible test lowercased: noun subjects"),
                  ("test2", "noun subjects", "tweets: noun subjects"),
                  ("test2", "pronoun subjects", "tweets: pronoun subjects")]
RECIPE_CONDITIONS = ["vp-coordination + attractor", "subject-relative + attractor",
                     "object-relative + attractor"]


def stored_report(spec: str) -> tuple[dict, str | None]:
    """The report at ``PATH#MODEL`` (``PATH`` from the repository root) and ``MODEL`` (None
    where the spec names no model)."""
    path, _, model = spec.partition("#")
    root = Path(__file__).resolve().parents[1]
    return json.loads((root / path).read_text(encoding="utf-8")), model or None


def only_model(names: list[str], spec: str) -> str:
    if len(names) != 1:
        raise ValueError(f"{spec}: name one of {', '.join(names)} (PATH#MODEL)")
    return names[0]


def recipes_table(report: dict, targeted: str, rows: str) -> list[str]:
    """bench/RESULTS.md's table of the agreement recipes and heads, a row each: first each model
    of the recipe's defaults (``report``, a ``bench.agreement`` report of them, with
    ``targeted`` its targeted report): its mean ± sd over its seeds in every column; then each of
    ``rows``, comma-separated ``EFFECT#MODEL|TARGETED#MODEL``: MODEL's seed-level paired
    difference from EFFECT's baseline (``against``), with its p, on the rows of
    ``RECIPE_COLUMNS``, and MODEL's mean ± sd on TARGETED's conditions ``RECIPE_CONDITIONS``
    (``#MODEL`` may be left out where the report tests or holds one model). A row is named by its
    model's recipe (``MODEL@RECIPE``, the effect's name, else the targeted one's)."""
    counts = {(split, row): report["summary"][split][next(iter(report["summary"][split]))][row]
              ["count"] for split, row, _ in RECIPE_COLUMNS}
    header = ["recipe or head (model on ...)", "seeds", "against",
              *(f"{title} ({counts[split, row]:,})" for split, row, title in RECIPE_COLUMNS),
              *(f"targeted: {condition}" for condition in RECIPE_CONDITIONS)]
    defaults, _ = stored_report(targeted)
    body = []
    for model in sorted(report["summary"]["test"], key=model_rank):
        cells = [report["summary"][split][model][row] for split, row, _ in RECIPE_COLUMNS]
        body.append([f"{model_name(model)} on the defaults", str(len(cells[1]["seeds"])), "-",
                     *(mean_sd_cell(cell) for cell in cells),
                     *(mean_sd_cell(defaults["summary"][model][condition])
                       for condition in RECIPE_CONDITIONS)])
    for spec in rows.split(","):
        effect_spec, _, targeted_spec = spec.partition("|")
        effect, model = stored_report(effect_spec)
        items, item_model = stored_report(targeted_spec)
        baseline = command_option(effect, "--baseline")
        key = f"vs {baseline}"
        model = model or only_model([name for name in effect["summary"]["test"]
                                     if name != baseline], effect_spec)
        item_model = item_model or only_model(list(items["summary"]), targeted_spec)
        named = model if "@" in model or "@" not in item_model else item_model
        tests = [effect["summary"][split][model][row].get(key) for split, row, _ in RECIPE_COLUMNS]
        body.append([model_name(named),
                     str(len(effect["summary"]["test"][model]["noun subjects"]["seeds"])),
                     model_name(baseline),
                     *("-" if test is None else difference_cell(test) for test in tests),
                     *(mean_sd_cell(items["summary"][item_model][condition])
                       for condition in RECIPE_CONDITIONS)])
    return markdown_table(header, body)


def split_name(split: str, title: str) -> str:
    return title if split == "test" else f"{split}: {title}"


def print_table(split: str, results: dict):
    rows = list(next(iter(results.values())))
    width = max(map(len, ["system", *results])) + 2
    print(f"\n{split}: accuracy % (count)")
    columns = [max(18, len(row) + 1) for row in rows]
    print(f"{'system':{width}}" + "".join(f"{row:>{w}}" for row, w in zip(rows, columns)))
    for system, table in results.items():
        print(f"{system:{width}}" + "".join(
            f"{'-' if cell['accuracy'] is None else format(cell['accuracy'], '.2f'):>{w - 7}} "
            f"({cell['count']:>4})" for cell, w in zip(table.values(), columns)))


def summarize(path: Path, baseline: str | None, markdown: bool) -> dict:
    """A stored report with its seed summary recomputed from its rows (``splits``) by today's
    ``seed_summary`` (bench/lib/report.py's), written back to ``path``; with ``markdown``
    its tables printed."""
    report = json.loads(path.read_text(encoding="utf-8"))
    baseline = baseline or command_option(report, "--baseline")
    report["summary"] = {}
    for split, results in report["splits"].items():
        summary = seed_summary(results, baseline)
        if summary:
            report["summary"][split] = summary
            if markdown:
                print(f"\n{split}:\n" + "\n".join(markdown_tables(summary, baseline)))
    write_json(str(path), report)
    return report


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path,
                        help="the recipe's folder (holding data-bin/agreement/), or the DATA "
                             "folder above it")
    parser.add_argument("--summarize", type=Path, metavar="REPORT",
                        help="recompute REPORT's seed summary and paired tests from the rows it "
                             "holds (nothing is run) and write it back; the baseline: "
                             "--baseline, else the one its command named")
    parser.add_argument("--split", action="append", metavar="SPLIT",
                        help="test (default), test1, ... (repeatable)")
    parser.add_argument("--checkpoint", action="append", default=[], metavar="NAME=PATH",
                        help="a trained model (repeatable)")
    parser.add_argument("--data-of", action="append", default=[], metavar="MODEL=DATA",
                        help="MODEL's checkpoints read the splits from DATA (the same examples, "
                             "other trees; repeatable)")
    parser.add_argument("--results", action="append", default=[], metavar="NAME=REPORT",
                        help="NAME's rows from an earlier report of this script, for the same "
                             "examples; NAME=REPORT#STORED: the rows it holds as STORED "
                             "(repeatable)")
    parser.add_argument("--baseline", metavar="MODEL",
                        help="with MODEL:SEED names: the model the others are tested against")
    parser.add_argument("--by-nearest-verb", action="store_true",
                        help="the noun subjects by the number of the nearest present-tense verb "
                             "too (the recipe's trees/{split}.conllu)")
    parser.add_argument("--json", help="write the report here")
    parser.add_argument("--markdown", action="store_true",
                        help="also print the seeds' summary as Markdown tables")
    args = parser.parse_args(argv)
    if args.summarize:
        return summarize(args.summarize, args.baseline, args.markdown)
    if args.data is None:
        parser.error("--data is required (or --summarize REPORT)")
    args.data = recipe_folder(args.data)
    data_bin = args.data / "data-bin" / VIEW
    checkpoints = named_values(parser, "--checkpoint", "NAME=PATH", args.checkpoint)
    stored = named_values(parser, "--results", "NAME=REPORT", args.results)
    data_of = {model: recipe_folder(Path(folder))
               for model, folder in named_values(parser, "--data-of", "MODEL=DATA", args.data_of)}
    majority = majority_classes(read_lines(args.data / "views" / VIEW / "train.label"),
                                read_meta(args.data / "views" / VIEW / "train.meta"))
    report = {"benchmark": "subject-verb agreement by attractors",
              "command": " ".join(["bench/agreement.py", *(argv or sys.argv[1:])]),
              "machine": machine(),
              "date": time.strftime("%Y-%m-%d"), "data": str(args.data),
              "checkpoints": dict(checkpoints), "results_from": dict(stored),
              "majority_classes": majority, "examples": {}, "splits": {}, "summary": {}}
    for split in args.split or ["test"]:
        meta = read_meta(data_bin / f"{split}.meta")
        labels = read_lines(args.data / "views" / VIEW / f"{split}.label")
        if len(labels) != len(meta):
            sys.exit(f"agreement.py: error: {data_bin / f'{split}.meta'}: {len(meta)} lines, "
                     f"but {split}.label has {len(labels)}")
        for folder in set(data_of.values()) - {args.data}:
            same_examples(folder, args.data, split)
        fingerprint = report["examples"][split] = examples_fingerprint(
            args.data / "views" / VIEW / f"{split}.label", data_bin / f"{split}.meta")
        systems = baselines(majority, meta)
        for name, path in checkpoints:
            folder = data_of.get(name.rpartition(":")[0] or name, args.data)
            systems[name] = model_predictions(path, folder / "data-bin" / VIEW, split)
        subjects = subject_words(args.data, split, meta)
        nearest = nearest_verb_numbers(args.data, split, len(meta)) if args.by_nearest_verb \
            else None
        results = {name: breakdown(predicted, labels, meta, subjects, nearest)
                   for name, predicted in systems.items()}
        counts = {row: cell["count"] for row, cell in results["majority class"].items()}
        for name, path in stored:
            results[name] = stored_results(name, path, split, fingerprint, counts)
        report["splits"][split] = results
        print_table(split, results)
        summary = seed_summary(results, args.baseline)
        if summary:
            report["summary"][split] = summary
            print(f"\n{split}: mean ± sd over seeds")
            width = max(map(len, summary)) + 2
            for model, rows in summary.items():
                print(f"{model:{width}}" + "".join(
                    f"{'-' if r['mean'] is None else format(r['mean'], '.2f'):>10} ± "
                    f"{'-' if r['sd'] is None else format(r['sd'], '.2f'):<5}"
                    for r in rows.values()))
            if args.markdown:
                print("\n" + "\n".join(markdown_tables(summary, args.baseline)))
    if args.json:
        write_json(args.json, report)
    return report


if __name__ == "__main__":
    main()
