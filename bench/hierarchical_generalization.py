"""Scores a checkpoint on McCoy et al.'s (2020) tense reinflection or question formation
(data-prep/prepare-hierarchical-generalization.sh): on the in-distribution test set and on the
generalization set, how often the output is the whole target, how often the word the paper
scores is right (tense: the main verb; question: the first word), and how often that word follows
the linear rule instead (the verb agreeing with the noun nearest before it; the first auxiliary
moved), overall and by what modifies the main subject (none, PP, relative clause).

    python -m bench.hierarchical_generalization --recipe data/tense \
        --checkpoint checkpoints/tense/tree2seq/checkpoint_best.pt --json tense-tree2seq.json

reads the recipe folder's gold trees of each split (``--split``, default test and gen), gives the
model what the recipe gave it (the gold trees themselves, or the source tokens parsed by the
recipe's parser: fairseq_tree.hub with the recipe), decodes greedily (``--beam``), and writes the
JSON and prints its table. ``--gold-trees FILE`` scores other sentences of the same grammar
instead, one bracketed gold tree a line (as the recipe writes them: the marker under the root):
held-out sets the repository does not contain.
"""

import argparse
import json
import sys
import time
from pathlib import Path

from bench.report import end_report, machine, markdown_table
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.trees import TreeSyntaxError, format_bracketed, parse_bracketed
from fairseq_tree.trees import hierarchical_generalization as hg

MEASURES = ("full_sentence", "scored_word", "linear_word", "linear_sentence")
SCORED_WORD = {"tense": "main verb", "question": "first word"}


def read_gold_trees(path: Path) -> list:
    """The gold trees of ``path``, one a line; a line that is no tree of these grammars is an
    error naming the file and line."""
    trees = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            tree = parse_bracketed(line)
            hg.analyze(tree)
        except (TreeSyntaxError, hg.NotOfTheGrammar) as error:
            raise FairseqTreeError(f"{path}:{number}: {error}") from None
        trees.append(tree)
    return trees


def example_scores(tree, analysis: hg.Analysis, output: list[str]) -> dict:
    """One example's measures (booleans): the output is the target; its scored word is the
    target's; it is the linear rule's where the two rules differ there (else False); the output
    is the linear rule's whole target where that differs from the hierarchical one."""
    hierarchical, linear = hg.target(tree), hg.target(tree, linear=True)
    index = hg.scored_index(analysis)
    word = output[index] if index < len(output) else None
    decisive = hierarchical[index] != linear[index]
    return {"full_sentence": output == hierarchical, "scored_word": word == hierarchical[index],
            "linear_word": decisive and word == linear[index],
            "linear_sentence": linear != hierarchical and output == linear}


def summarize(trees: list, outputs: list[list[str]]) -> dict:
    """{"all": ..., "by_subject_modifier": {modifier: ...}}, each the count of examples and the
    percentage of each measure."""
    groups: dict = {"all": []}
    for tree, output in zip(trees, outputs, strict=True):
        analysis = hg.analyze(tree)
        scores = example_scores(tree, analysis, output)
        groups["all"].append(scores)
        groups.setdefault(analysis.subject_modifier, []).append(scores)

    def percentages(rows):
        return {"examples": len(rows), **{measure: round(100 * sum(r[measure] for r in rows)
                                                         / len(rows), 2) for measure in MEASURES}}

    return {"all": percentages(groups.pop("all")),
            "by_subject_modifier": {modifier: percentages(groups[modifier])
                                    for modifier in hg.MODIFIERS if modifier in groups}}


def model_inputs(trees: list, recipe: dict) -> tuple[list[str], bool]:
    """What the model reads for these gold trees: the trees themselves (a gold-tree recipe), or
    the source tokens for the hub to parse as the recipe did."""
    if recipe["trees"] == "gold":
        return [format_bracketed(tree) for tree in trees], True
    return [" ".join(hg.leaves(tree)) for tree in trees], False


def load(checkpoint: Path, recipe_dir: Path, batch_size: int):
    """The checkpoint through the translation hub, with the recipe's text steps."""
    from fairseq_tree import hub

    return hub.from_pretrained(str(checkpoint.parent), checkpoint.name, recipe=str(recipe_dir),
                               detokenize=False, batch_size=batch_size)


def translate(model, lines: list[str], trees: bool, beam: int,
              batch_size: int) -> list[list[str]]:
    outputs = []
    for start in range(0, len(lines), batch_size * 8):
        outputs += model.translate(lines[start:start + batch_size * 8], beam=beam, trees=trees)
    return [output.split() for output in outputs]


def markdown_lines(report: dict, splits=None) -> list[str]:
    """The table of a report (or of several models' reports, ``{"models": {name: report}}``):
    a row a split and subject modifier, the examples and each measure in percent."""
    models = report.get("models") or {report.get("model", "model"): report}
    task = next(iter(models.values()))["task"]
    header = ["model", "split", "subject", "examples", "sentence %",
              f"{SCORED_WORD[task]} %", f"{SCORED_WORD[task]} by the linear rule %"]
    rows = []
    for name, one in models.items():
        for split, summary in one["splits"].items():
            if splits and split not in splits:
                continue
            for subject, cells in [("all", summary["all"]),
                                   *summary["by_subject_modifier"].items()]:
                rows.append([name, split, subject, f"{cells['examples']:,}",
                             f"{cells['full_sentence']:.2f}", f"{cells['scored_word']:.2f}",
                             f"{cells['linear_word']:.2f}"])
    return markdown_table(header, rows)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipe", required=True, type=Path,
                        help="a folder of prepare-hierarchical-generalization.sh (recipe.json)")
    parser.add_argument("--checkpoint", required=True, type=Path)
    parser.add_argument("--split", action="append", choices=("train", "valid", "test", "gen"),
                        help="recipe splits to score (default: test and gen)")
    parser.add_argument("--gold-trees", action="append", type=Path, metavar="FILE",
                        help="score these gold trees instead (named by the file's stem)")
    parser.add_argument("--model", help="the model's name in the report and table")
    parser.add_argument("--beam", type=int, default=1, help="1: greedy, as the paper")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        recipe = json.loads((args.recipe / "recipe.json").read_text(encoding="utf-8"))
        if recipe.get("task") not in hg.TASKS:
            raise FairseqTreeError(f"{args.recipe / 'recipe.json'}: not a recipe of "
                                   "prepare-hierarchical-generalization.sh (no task)")
        sources = ({path.stem: path for path in args.gold_trees} if args.gold_trees else
                   {split: args.recipe / recipe["gold_trees"] / f"{split}.src"
                    for split in args.split or ("test", "gen")})
        splits = {}
        model = load(args.checkpoint, args.recipe, args.batch_size)
        for name, path in sources.items():
            trees = read_gold_trees(path)
            lines, given_trees = model_inputs(trees, recipe)
            outputs = translate(model, lines, given_trees, args.beam, args.batch_size)
            splits[name] = summarize(trees, outputs)
            print(f"{name}: {splits[name]['all']}", file=sys.stderr)
    except (OSError, FairseqTreeError) as error:
        sys.exit(f"error: {error}")
    report = {"task": recipe["task"], "trees": recipe["trees"],
              "model": args.model or args.checkpoint.parent.name,
              "checkpoint": str(args.checkpoint), "recipe": str(args.recipe),
              "beam": args.beam, "splits": splits,
              "seconds": round(time.perf_counter() - started, 1),
              "command": " ".join(["python -m bench.hierarchical_generalization",
                                   *(argv if argv is not None else sys.argv[1:])]),
              "machine": machine()}
    return end_report(report, markdown_lines(report), str(args.json) if args.json else None)


if __name__ == "__main__":
    main()
