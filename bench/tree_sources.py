"""Where do the source trees come from, and does it matter? tree2seq on the whole Bible with
trees from spaCy's trained dependency parser (issue 28) against other tree sources and fairseq's
Transformer on the leaves, from the runs of bench/lib/seeds.py (no training here).

    python -m bench.tree_sources --runs RUN.json ... --keep KEEP --data runs/data \\
        --json bench/results/tree-sources.json

Systems are (pair, model) of configs/: French -> English ``bible-fr-en-spacy`` tree2seq (spaCy
``fr_core_news_sm`` trees), ``bible-fr-en`` tree2seq (flat trees) and transformer; English ->
French ``bible-en-fr-spacy`` tree2seq (spaCy English trees), ``bible-en-fr`` tree2seq
(link-grammar trees) and transformer. Each ``--runs`` file is a bench/lib/seeds.py report whose
``--keep`` was ``KEEP/<pair>``; the rows are merged (a run is one pair, model and seed). Then, from
the kept translations and the recipes' files: mean ± sd of sacreBLEU per system; per seed,
sacrebleu's paired bootstrap of each system against the spaCy-tree tree2seq of its direction;
over the seeds, the paired t-test of the same differences (bench/lib/report.py); per tree source, the
source trees' internal nodes per word, flat and multi-root lines (training and test verses), and
``--parse-seconds`` when given; the F1 of the spaCy English trees against link-grammar's on the
test verses (fairseq-tree-score-parses; link-grammar's flat fallbacks left out).
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from bench.lib import seeds
from bench.lib.tables import ROOT
from bench.lib.tree_counts import tree_counts
from bench.lib.report import difference_cell, holm, markdown_table, paired_t_test, write_json

from fairseq_tree.trees.evaluation import score_files
from fairseq_tree.data.recipe import Recipe, has_recipe
from fairseq_tree.parsing.base import is_flat_fallback
from fairseq_tree.trees.bracketed import parse_bracketed
from fairseq_tree.trees.dependency import MULTI_ROOT_LABEL

# direction -> (source, target, [(pair, model, system name)], the first is the reference). A
# pair ending in "@cpu" is an earlier CPU run's translations, rescored (``cpu_runs``).
DIRECTIONS = {
    "fr-en": ("fr", "en", [("bible-fr-en-spacy", "tree2seq", "tree2seq, spaCy trees"),
                           ("bible-fr-en", "tree2seq", "tree2seq, flat trees"),
                           ("bible-fr-en", "transformer", "transformer (leaves)"),
                           ("bible-fr-en-induced@cpu", "tree2seq",
                            "tree2seq, induced trees (CPU runs)"),
                           ("bible-fr-en@cpu", "tree2seq", "tree2seq, flat trees (CPU runs)"),
                           ("bible-fr-en@cpu", "transformer", "transformer (CPU runs)")]),
    "en-fr": ("en", "fr", [("bible-en-fr-spacy", "tree2seq", "tree2seq, spaCy trees"),
                           ("bible-en-fr-spacy", "transformer", "transformer (leaves)"),
                           ("bible-en-fr@cpu", "tree2seq",
                            "tree2seq, link-grammar trees (CPU runs)"),
                           ("bible-en-fr@cpu", "transformer", "transformer (CPU runs)")]),
}
# The earlier CPU runs' kept translations (bench/results/), of the 1,007 verses of Acts that the
# recipes kept before e312cf2; these 0-based lines are the three placeholder verses the recipes
# now leave out (Acts 8:37, 15:34, 24:7), so the rest aligns with today's 1,004 references.
PLACEHOLDER_LINES = (289, 552, 852)
CPU_RUNS = [  # (direction, pair, model, kept file pattern with {seed}, results JSON)
    ("fr-en", "bible-fr-en-induced@cpu", "tree2seq",
     "bench/results/induced-translation/fr-en.tree2seq-induced.seed-{seed}.en",
     "bench/results/induced-translation.json"),
    ("fr-en", "bible-fr-en@cpu", "tree2seq",
     "bench/results/induced-translation/fr-en.tree2seq-flat.seed-{seed}.en",
     "bench/results/induced-translation.json"),
    ("fr-en", "bible-fr-en@cpu", "transformer",
     "bench/results/induced-translation/fr-en.transformer.seed-{seed}.en",
     "bench/results/induced-translation.json"),
    ("en-fr", "bible-en-fr@cpu", "tree2seq", "bench/results/bible-seeds/tree2seq.seed-{seed}.fr",
     "bench/results/bible-seeds.json"),
    ("en-fr", "bible-en-fr@cpu", "transformer",
     "bench/results/bible-seeds/transformer.seed-{seed}.fr", "bench/results/bible-seeds.json"),
]


def merged_runs(paths: list[str]) -> list[dict]:
    """The rows of every bench/lib/seeds.py report, one per (pair, model, seed): the last wins."""
    runs = {}
    for path in paths:
        for row in json.loads(Path(path).read_text(encoding="utf-8")).get("runs", []):
            runs[(row["pair"], row["model"], row["seed"])] = {**row, "from": path}
    return list(runs.values())


def reference_file(data: Path, direction: str) -> Path:
    """The raw test references of a direction: the spaCy pair's (every pair of a direction has
    the same test verses)."""
    _, tgt, members = DIRECTIONS[direction]
    return data / members[0][0] / "ref" / f"test.{tgt}"


def cpu_runs(root: Path, data: Path, keep: Path, seeds: list[int]) -> list[dict]:
    """The earlier CPU runs of ``CPU_RUNS`` as rows: their kept translations without the
    placeholder lines, written to ``keep/<pair>/<model>.seed-S.<tgt>`` and scored with sacreBLEU
    (the evaluation's settings) against today's references."""
    from sacrebleu.metrics import BLEU

    rows = []
    for direction, pair, model, pattern, origin in CPU_RUNS:
        reference = reference_file(data, direction)
        if not reference.exists():
            continue
        refs = reference.read_text(encoding="utf-8").splitlines()
        for seed in seeds:
            kept = root / pattern.format(seed=seed)
            if not kept.exists():
                continue
            lines = kept.read_text(encoding="utf-8").splitlines()
            if len(lines) != len(refs) + len(PLACEHOLDER_LINES):
                sys.exit(f"{kept}: {len(lines)} lines, expected {len(refs)} + "
                         f"{len(PLACEHOLDER_LINES)} placeholder verses")
            hyps = [line for i, line in enumerate(lines) if i not in PLACEHOLDER_LINES]
            target = keep / pair / f"{model}.seed-{seed}.{DIRECTIONS[direction][1]}"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("".join(h + "\n" for h in hyps), encoding="utf-8")
            rows.append({"pair": pair, "model": model, "seed": seed,
                         "sacrebleu": BLEU().corpus_score(hyps, [refs]).score,
                         "from": str(kept), "results": origin, "device": "cpu",
                         "note": "translations of the 1,007 verses less the 3 placeholders"})
    return rows


def systems(runs: list[dict]) -> list[dict]:
    """Mean ± sd of sacreBLEU (and tokenized BLEU) per system over its seeds."""
    rows = []
    for direction, (_, _, members) in DIRECTIONS.items():
        for pair, model, name in members:
            mine = sorted((r for r in runs if (r["pair"], r["model"]) == (pair, model)),
                          key=lambda r: r["seed"])
            if not mine:
                continue
            scores = [r["sacrebleu"] for r in mine]
            rows.append({"direction": direction, "system": name, "pair": pair, "model": model,
                         "seeds": [r["seed"] for r in mine], "sacrebleu": scores,
                         "tokenized_bleu": [r.get("tokenized_bleu") for r in mine],
                         "mean": statistics.mean(scores),
                         "sd": statistics.stdev(scores) if len(scores) > 1 else None,
                         "parameters": mine[0].get("parameters"),
                         "train_seconds": [r.get("train_seconds") for r in mine]})
    return rows


def comparisons(runs: list[dict], keep: Path, data: Path, resamples: int) -> list[dict]:
    """Per direction and other system: the bootstrap of each shared seed against the spaCy-tree
    tree2seq and the seed-level t-test of the differences."""
    tests = []
    for direction, (_, tgt, members) in DIRECTIONS.items():
        (ref_pair, ref_model, ref_name), others = members[0], members[1:]
        first = {r["seed"]: r for r in runs if (r["pair"], r["model"]) == (ref_pair, ref_model)}
        for pair, model, name in others:
            other = {r["seed"]: r for r in runs if (r["pair"], r["model"]) == (pair, model)}
            shared = sorted(set(first) & set(other))
            if not shared:
                continue
            reference = reference_file(data, direction)
            bootstraps = []
            for seed in shared:
                files = [keep / p / f"{m}.seed-{seed}.{tgt}"
                         for p, m in ((ref_pair, ref_model), (pair, model))]
                if reference.exists() and all(f.exists() for f in files):
                    bootstraps.append({"seed": seed, **seeds.sacrebleu_paired(
                        reference, *files, resamples, False)})
            tests.append({"direction": direction, "first": ref_name, "other": name,
                          "paired_bootstrap": bootstraps,
                          "seed_t_test": paired_t_test([first[s]["sacrebleu"] for s in shared],
                                                       [other[s]["sacrebleu"] for s in shared])})
    return tests


def multi_root_lines(path: Path) -> int:
    """Lines whose root is the conversion's ``TOP`` over several roots."""
    with open(path, encoding="utf-8") as lines:
        return sum(line.strip() != "" and not is_flat_fallback(line)
                   and parse_bracketed(line).label == MULTI_ROOT_LABEL for line in lines)


def source_trees(data: Path, parse_seconds: dict) -> list[dict]:
    """Counts of each pair's source trees (training and test verses, words)."""
    counts = []
    for direction, (src, _, members) in DIRECTIONS.items():
        for pair in dict.fromkeys(p for p, _, _ in members):
            folder = data / pair
            if not has_recipe(folder):
                continue
            recipe = Recipe.read(folder)
            for split in ("train", "test"):
                trees = folder / "trees" / f"{split}.{src}"
                if trees.exists():
                    counts.append({"direction": direction, "pair": pair,
                                   "parser": recipe.text.parser,
                                   "parser_args": recipe.parser_args, "split": split,
                                   **tree_counts(trees), "multi_root": multi_root_lines(trees),
                                   "parse_seconds": parse_seconds.get(f"{pair}:{split}")})
    return counts


def english_tree_f1(data: Path, gold: Path | None) -> dict | None:
    """spaCy's English test trees scored against link-grammar's (``gold``: the same verses
    parsed as the En-Fr recipe parses them), leaving out the verses link-grammar could not parse
    (its flat fallbacks)."""
    pred = data / "bible-en-fr-spacy" / "parsed" / "test.en"
    if gold is None or not (gold.exists() and pred.exists()):
        return None
    kept = [(g, p) for g, p in zip(gold.read_text(encoding="utf-8").splitlines(),
                                   pred.read_text(encoding="utf-8").splitlines(), strict=True)
            if not is_flat_fallback(g)]
    folder = data / "bible-en-fr-spacy" / "score"
    folder.mkdir(exist_ok=True)
    (folder / "gold.en").write_text("".join(g + "\n" for g, _ in kept), encoding="utf-8")
    (folder / "pred.en").write_text("".join(p + "\n" for _, p in kept), encoding="utf-8")
    return {"left_out_flat_gold": len(gold.read_text(encoding="utf-8").splitlines()) - len(kept),
            **score_files(str(folder / "gold.en"), str(folder / "pred.en"))}


DIRECTION_NAMES = {"fr-en": "French -> English", "en-fr": "English -> French"}


def systems_table(report: dict, direction: str) -> list[str]:
    """One direction as a Markdown table (bench/RESULTS.md's and the printed one): sacreBLEU of
    each system by seed and mean ± sd; each other system's difference from the spaCy-tree
    tree2seq with the seed-level paired t-test (bench/lib/report.py), Holm's adjustment over the
    report's tests (both directions), and sacrebleu's paired bootstrap p of each seed."""
    systems = [row for row in report["systems"] if row["direction"] == direction]
    seeds = systems[0]["seeds"]
    first = {row["direction"]: row for row in report["systems"]}  # the first of each direction
    first = {d: next(row for row in report["systems"] if row["direction"] == d) for d in first}
    tests = {}
    for test in report["comparisons"]:
        other = next(row for row in report["systems"]
                     if (row["direction"], row["system"]) == (test["direction"], test["other"]))
        base = first[test["direction"]]
        tests[(test["direction"], test["other"])] = {
            **paired_t_test(base["sacrebleu"], other["sacrebleu"]),
            "bootstrap": [b["p_value"] for b in test["paired_bootstrap"]]}
    tested = [key for key, test in tests.items() if test["p_value"] is not None]
    adjusted = dict(zip(tested, holm([tests[key]["p_value"] for key in tested])))
    body = []
    for row in systems:
        key = (direction, row["system"])
        test = tests.get(key)
        body.append([row["system"], "-" if row["parameters"] is None else f"{row['parameters']:,}",
                     *(f"{x:.2f}" for x in row["sacrebleu"]),
                     f"{row['mean']:.2f} ± {row['sd']:.2f}" if row["sd"] is not None
                     else f"{row['mean']:.2f}",
                     difference_cell(test) if test else "",
                     f"{adjusted[key]:.2g}" if key in adjusted else "",
                     ", ".join(f"{p:.3f}" for p in test["bootstrap"]) if test else ""])
    return markdown_table(
        ["system", "parameters", *(f"seed {s}" for s in seeds), "mean ± sd",
         f"minus {systems[0]['system']}, seed-level t-test (p)", f"Holm p ({len(tested)} tests)",
         "bootstrap p by seed"], body)


def source_trees_table(report: dict, link_grammar: str | None = None) -> list[str]:
    """The source trees as a Markdown table: internal nodes per word as tree2seq reads them,
    flat and multi-root lines, training / test verses; with ``link_grammar`` (a
    bench/induced_translation.py report, a path from the repository root) its link-grammar
    trees too."""
    counts = [{**row, "trees": f"{row['parser']} (`{row['pair']}`)"}
              for row in report["source_trees"]]
    if link_grammar:
        other = json.loads((ROOT / link_grammar).read_text(encoding="utf-8"))
        counts += [{**row, "trees": f"link-grammar (`{Path(link_grammar).name}`)"}
                   for row in other["source_trees"]
                   if row["trees"] == "link-grammar" and row["leaves_are"] == "words"]
    body = []
    for trees in dict.fromkeys(row["trees"] for row in counts):
        split = {row["split"]: row for row in counts if row["trees"] == trees}
        train, test = split["train"], split["test"]
        flat = (f"{train['flat_trees']:,} / {test['flat_trees']:,} "
                f"({100 * train['flat_trees'] / train['sentences']:.1f}% / "
                f"{100 * test['flat_trees'] / test['sentences']:.1f}%)")
        roots = (f"{train['multi_root']:,} / {test['multi_root']:,}" if "multi_root" in train
                 else "-")
        body.append([trees, DIRECTION_NAMES.get(train["direction"], train["direction"]),
                     f"{train['nodes_per_leaf']:.3f} / {test['nodes_per_leaf']:.3f}", flat,
                     roots])
    return markdown_table(["source trees", "direction", "nodes per word (train / test)",
                           "flat lines (train / test)", "several roots"], body)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", nargs="*", default=[], metavar="JSON",
                        help="bench/lib/seeds.py reports of the runs (none: the CPU runs and the "
                        "trees only)")
    parser.add_argument("--keep", required=True, type=Path,
                        help="KEEP/<pair>/<model>.seed-S.<tgt>: the runs' translations")
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--parse-seconds", default="{}",
                        help='JSON {"PAIR:SPLIT": seconds} measured apart, copied into the report')
    parser.add_argument("--link-grammar-test", type=Path, metavar="TREES",
                        help="link-grammar's trees of bible-en-fr-spacy/cased/test.en "
                        "(fairseq-tree-parse --parser link-grammar --max-null-count 2, as the "
                        "En-Fr recipe parses), for the F1")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)
    runs = merged_runs(args.runs) + cpu_runs(Path(__file__).resolve().parents[1], args.data,
                                              args.keep, [1, 2, 3])
    report = {"benchmark": "tree2seq on the whole Bible: spaCy trees against other tree sources "
                           "and the Transformer (issue 28)",
              "command": " ".join(["bench/tree_sources.py", *(argv if argv is not None
                                                               else sys.argv[1:])]),
              "date": time.strftime("%Y-%m-%d"), "systems": systems(runs),
              "comparisons": comparisons(runs, args.keep, args.data, args.resamples),
              "source_trees": source_trees(args.data, json.loads(args.parse_seconds)),
              "english_trees_f1_against_link_grammar": english_tree_f1(args.data, args.link_grammar_test),
              "runs": runs}
    print("\n\n".join("\n".join(systems_table(report, direction))
                      for direction in dict.fromkeys(r["direction"] for r in report["systems"])))
    write_json(args.json, report)
    return report


if __name__ == "__main__":
    main()
