"""McCoy et al.'s (2020) hierarchical generalization as the questions of its family score it
(bench/hierarchical_generalization*.py): a checkpoint on a recipe's gold trees
(data-prep/prepare-hierarchical-generalization.sh), how often the output is the whole target, how
often the word the paper scores is right (tense: the main verb; question: the first word), and
how often that word follows the linear rule instead; overall and by what modifies the main
subject. And the options of the questions that train systems of configs/ and score them."""

import argparse
import os
import sys
from pathlib import Path

from bench.lib import compare
from bench.tasks import hierarchical_grammar as hg
from fairseq_tree.data import recipe as data_recipe
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.trees import TreeSyntaxError, format_bracketed, parse_bracketed

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


def model_inputs(trees: list, recipe: dict, parsed: Path | None = None) -> tuple[list[str], bool]:
    """What the model reads for these gold trees: the trees themselves (a gold-tree recipe), the
    recipe's own parse of them (``parsed``, a recipe split's trees/ file: what the model was
    trained and validated on), or the source tokens for the hub to parse as the recipe did."""
    if recipe["trees"] == "gold":
        return [format_bracketed(tree) for tree in trees], True
    if parsed is not None:
        lines = parsed.read_text(encoding="utf-8").splitlines()
        if len(lines) != len(trees):
            raise FairseqTreeError(f"{parsed}: {len(lines)} trees for {len(trees)} gold trees")
        return lines, True
    return [" ".join(hg.leaves(tree)) for tree in trees], False


def is_language_model(recipe: dict) -> bool:
    return recipe.get("kind") == "language_model"


def load(checkpoint: Path, recipe_dir: Path, batch_size: int, recipe: dict | None = None):
    """The checkpoint through the translation hub, with the recipe's text steps (a language
    model's recipe: through fairseq's language-model hub)."""
    if is_language_model(recipe or {}):
        from fairseq.models.transformer_lm import TransformerLanguageModel

        return TransformerLanguageModel.from_pretrained(
            str(checkpoint.parent), checkpoint.name, str(recipe_dir / "data-bin"),
            batch_size=batch_size, max_tokens=None)
    from fairseq_tree import hub

    return hub.from_pretrained(str(checkpoint.parent), checkpoint.name, recipe=str(recipe_dir),
                               detokenize=False, batch_size=batch_size)


def continue_sequences(model, prefixes: list[str]) -> list[list[str]]:
    """A language model's greedy continuation of each prefix (a source sentence and its
    marker) up to EOS, at most a token for every prefix token and one more, as ``translate``
    bounds a target."""
    encoded = [model.encode(prefix) for prefix in prefixes]  # each ends in EOS, which
    # fairseq's language_modeling task moves to the front: the model's start of a sequence
    outputs = []
    for ids, hypotheses in zip(encoded, model.generate(encoded, beam=1, max_len_a=2,
                                                       max_len_b=1)):
        continuation = hypotheses[0]["tokens"][len(ids) - 1:]
        outputs.append(model.string(continuation).split())
    return outputs


def translate(model, lines: list[str], trees: bool, beam: int,
              batch_size: int) -> list[list[str]]:
    """The outputs (their leaves, where the model writes trees), at most a token for every
    source token and one more (fairseq's length limit): every target of both tasks is one
    token shorter than its source; a written tree of n leaves has at most 2n - 1 nodes of 3
    tokens each, 7 tokens a source token then."""
    tokens_per_word = model.task.output_tree.TOKENS_PER_WORD if model.task.output_tree else 1
    outputs = []
    for start in range(0, len(lines), batch_size * 8):
        outputs += model.translate(lines[start:start + batch_size * 8], beam=beam, trees=trees,
                                   max_len_a=tokens_per_word, max_len_b=1)
    return [output.split() for output in outputs]


def score(recipe_dir: Path, checkpoint: Path, sources: dict[str, Path], recipe: dict,
          beam: int = 1, batch_size: int = 64, parsed: dict[str, Path] | None = None) -> dict:
    """{name: summary} of the checkpoint on each gold-tree file of ``sources`` ({name: path}),
    the model loaded once; ``parsed`` ({name: path}) the recipe's own parses of those that are
    its splits."""
    model = load(checkpoint, recipe_dir, batch_size, recipe)
    splits = {}
    for name, path in sources.items():
        trees = read_gold_trees(path)
        if is_language_model(recipe):
            outputs = continue_sequences(model, [" ".join(hg.leaves(tree)) for tree in trees])
        else:
            lines, given_trees = model_inputs(trees, recipe, (parsed or {}).get(name))
            outputs = translate(model, lines, given_trees, beam, batch_size)
        splits[name] = summarize(trees, outputs)
        print(f"{name}: {splits[name]['all']}", file=sys.stderr)
    return splits


def read_recipe(recipe_dir: Path) -> dict:
    """The recipe.json of a prepare-hierarchical-generalization.sh folder."""
    recipe = data_recipe.read_recipe(recipe_dir)
    if recipe.get("task") not in hg.TASKS:
        raise FairseqTreeError(f"{data_recipe.recipe_path(recipe_dir)}: not a recipe of "
                               "prepare-hierarchical-generalization.sh (no task)")
    return recipe


def recipe_sources(recipe_dir: Path, recipe: dict, splits) -> dict[str, Path]:
    """{split: the split's gold-tree file} of a recipe folder."""
    return {split: recipe_dir / recipe["gold_trees"] / f"{split}.src" for split in splits}


def recipe_parses(recipe_dir: Path, splits) -> dict[str, Path]:
    """{split: the split's source trees as the recipe wrote them (its parser's)}."""
    return {split: recipe_dir / "trees" / f"{split}.src" for split in splits}


def add_run_options(parser: argparse.ArgumentParser, checkpoints: str, resumed: str):
    """The options of a script that trains and scores systems of configs/ on the recipe's data
    (bench/hierarchical_generalization_seeds.py and bench/hierarchical_generalization_curves.py)."""
    parser.add_argument("--data", default=os.environ.get("DATA", str(compare.ROOT / "data")),
                        help="prepare-hierarchical-generalization.sh's output root")
    parser.add_argument("--checkpoints", default=checkpoints, help="one folder a seed")
    parser.add_argument("--config-dir", default=str(compare.ROOT / "configs"))
    parser.add_argument("--json", required=True, type=Path,
                        help=f"results (read first: {resumed})")
    parser.add_argument("--batch-size", type=int, default=128)


def check_configs(systems, config_dir: str):
    """Exit naming the first config of ``systems`` ((config, model) pairs) not in
    ``config_dir``."""
    for config, _ in systems:
        if not (Path(config_dir) / f"{config}.yaml").exists():
            sys.exit(f"error: no config {config}.yaml in {config_dir}")
