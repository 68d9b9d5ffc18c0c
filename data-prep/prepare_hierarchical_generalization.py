"""The data of McCoy, Frank & Linzen (TACL 2020), generated here: tense reinflection and question
formation from their grammars (``bench.tasks.hierarchical_grammar``, run with the repository
root on the path), each source sentence with its gold tree, binarized for the
``tree_translation`` task.

    python data-prep/prepare_hierarchical_generalization.py --out $DATA --task tense \
        [--trees gold right-branching spacy] [--spacy-model en_core_web_sm] [--seed 1]

writes, for every tree source, the folder ``$DATA/TASK`` (gold trees), ``TASK-right-branching``
or ``TASK-spacy``:

    tok/{split}.{src,tgt}   the source tokens (sentence and marker) and the target tokens
    trees/{split}.src       the source trees: the grammar's, (ROOT (S ...) (MARK marker)), or
                            the parser's over the source tokens, marker included
    gold/{split}.src        beside a parser's trees, the grammar's (what the scores read)
    data-bin/               fairseq-tree-preprocess, one dictionary for both sides; the
                            generalization split is fairseq's second test set, ``test1``
    recipe.json             the task, the tree source, sizes, splits and the generator's record

With ``--output-trees`` (tense), ``$DATA/tense-output-trees`` is the gold folder with the
target's gold trees beside its text (``trees/{split}.tgt``: the sentence over the target's
words, reinflected verbs tagged VBZ or VBP), binarized with ``--target-trees``, for
``tree_translation --target-trees``. And, with ``--language-model``, ``$DATA/TASK-lm`` for
fairseq's ``language_modeling`` task (Murty et al.'s setup, ACL 2023: source, marker and target
as one sequence, a language model's loss on all of it): ``lm/{split}.txt`` one example a line, ``trees/{split}.src`` the gold trees
(what the scores read), ``data-bin/`` fairseq-preprocess ``--only-source`` (gen as ``test1``)
and a ``recipe.json`` of kind ``language_model``.

Splits (the paper's sizes by default): train, valid and test follow the training distribution
(either marker; a PRESENT or QUEST example only where the linear and the hierarchical rule give
the same target), gen holds only PRESENT or QUEST examples where they differ in the scored word.
Each split has its own random stream, sampled gen, test, valid, train, each skipping the source
sentences of the ones before it: every source line occurs once, and a smaller training set is a
prefix of a larger one. Only the tree differs between the folders of one task.
"""

import argparse
import collections
import json
import random
import sys
import time
from pathlib import Path

from recipe_steps import spacy_model_version

from fairseq_tree.data.preprocess import preprocess_folder
from fairseq_tree.data.recipe import Recipe, TextSteps
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.parsing import ParserUnavailable, build_parser
from fairseq_tree.trees import Tree, format_bracketed
from bench.tasks import hierarchical_grammar as hg

SPLITS = ("train", "valid", "test", "gen")
SAMPLING_ORDER = ("gen", "test", "valid", "train")
BINARIZED_AS = {"train": "train", "valid": "valid", "test": "test", "gen": "test1"}
SIZES = {"train": 100_000, "valid": 10_000, "test": 10_000, "gen": 10_000}
TREE_SOURCES = ("gold", "right-branching", "spacy")
PARSE_BATCH = 256
GOLD_TREES = "gold"  # the grammar's trees, beside another source's (the scores read them)


def generate_splits(task: str, seed: int, sizes: dict[str, int], progress=None) -> dict:
    """{split: source trees}, deterministic for ``seed`` (see the module docstring)."""
    seen: set = set()
    splits = {}
    for split in SAMPLING_ORDER:
        rng = random.Random(f"fairseq-tree {task} {seed} {split}")
        trees = []
        while len(trees) < sizes[split]:
            tree = hg.sample_example(rng, task, generalization=split == "gen")
            words = tuple(hg.leaves(tree))
            if words not in seen:
                seen.add(words)
                trees.append(tree)
                if progress and len(trees) % 20_000 == 0:
                    progress(f"{task} {split}: {len(trees):,} of {sizes[split]:,}")
        splits[split] = trees
    return splits


def split_stats(trees: list[Tree]) -> dict:
    """Markers, subject modifiers (of the transforming examples) and source lengths."""
    analyses = [hg.analyze(tree) for tree in trees]
    lengths = [len(hg.leaves(tree)) for tree in trees] or [0]
    transforming = [a for a in analyses if a.marker in ("PRESENT", "QUEST")]
    return {
        "examples": len(trees),
        "markers": dict(sorted(collections.Counter(a.marker for a in analyses).items())),
        "subject_modifiers_transforming": dict(sorted(collections.Counter(
            a.subject_modifier for a in transforming).items())),
        "source_tokens": {"mean": round(sum(lengths) / max(len(trees), 1), 3),
                          "min": min(lengths), "max": max(lengths)},
    }


def gold_lines(splits: dict) -> dict[str, list[str]]:
    """{split: the grammar's trees, bracketed, a line each}."""
    return {split: [format_bracketed(tree) for tree in trees] for split, trees in splits.items()}


def source_trees(splits: dict, source: str, spacy_model: str | None) -> dict[str, list[str]]:
    """{split: source tree lines} from ``source``, a fairseq-tree-parse backend, over the source
    tokens, marker included, as ``fairseq-tree-translate --recipe`` parses a raw source line
    (the grammar's own trees: ``gold_lines``)."""
    parser = build_parser(source, "en", spacy_model=spacy_model)
    try:
        out = {}
        for split, trees in splits.items():
            sentences = [hg.leaves(tree) for tree in trees]
            out[split] = [result.tree for start in range(0, len(sentences), PARSE_BATCH)
                          for result in parser.parse(sentences[start:start + PARSE_BATCH])]
        return out
    finally:
        parser.close()


def spacy_pipeline(model: str) -> dict:
    """The recipe's record of the spaCy pipeline that parsed it (what the hub parses with)."""
    import spacy

    return {"model": model, "model_version": spacy_model_version(model, "en"),
            "spacy_version": spacy.__version__}


def write_lines(path: Path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def pair_name(task: str, source: str) -> str:
    return task if source == "gold" else f"{task}-{source}"


def write_pairs(pair_dir: Path, splits: dict, source_trees: dict[str, list[str]]):
    """tok/{split}.src and .tgt (the source and target tokens) and trees/{split}.src
    (``source_trees``, a line each) of every split."""
    for split in SPLITS:
        write_lines(pair_dir / "tok" / f"{split}.src",
                    (" ".join(hg.leaves(tree)) for tree in splits[split]))
        write_lines(pair_dir / "tok" / f"{split}.tgt",
                    (" ".join(hg.target(tree)) for tree in splits[split]))
        write_lines(pair_dir / "trees" / f"{split}.src", source_trees[split])


def generated(splits: dict, stats: dict, seed: int) -> dict:
    """What every recipe.json of one generated task records: sizes, splits, the generator."""
    return {"sizes": {split: len(splits[split]) for split in SPLITS},
            "splits": dict(BINARIZED_AS),
            "generator": {"seed": seed, "sampling_order": list(SAMPLING_ORDER),
                          "rule_probabilities": "uniform", "stats": stats}}


def write_task(out: Path, task: str, sources: list[str], sizes: dict[str, int], seed: int,
               spacy_model: str | None = None, workers: int = 1, binarise: bool = True,
               progress=print, language_model: bool = False,
               output_trees: bool = False) -> dict[str, dict]:
    """Generate ``task`` once and write a folder for each tree source (and the language
    model's, ``language_model``; the gold trees' with target trees, ``output_trees``);
    {pair: recipe.json}."""
    splits = generate_splits(task, seed, sizes, progress)
    stats = {split: split_stats(trees) for split, trees in splits.items()}
    recipes = {}
    gold = gold_lines(splits)
    for source in sources:
        pair_dir = out / pair_name(task, source)
        progress(f"{pair_dir}: {source} trees")
        write_pairs(pair_dir, splits,
                    gold if source == "gold" else source_trees(splits, source, spacy_model))
        if source != "gold":
            for split, lines in gold.items():
                write_lines(pair_dir / GOLD_TREES / f"{split}.src", lines)
        if binarise:
            preprocess_folder(pair_dir, test=("test", "gen"), joined_dictionary=True,
                              workers=workers)
        steps = TextSteps(tokenize="none", parser=None if source == "gold" else source)
        details = {
            "pair": pair_name(task, source), "task": task, "trees": source,
            "gold_trees": "trees" if source == "gold" else GOLD_TREES,
            **generated(splits, stats, seed),
        }
        recipe = Recipe("translation", steps, src="src", tgt="tgt",
                        languages={"src": "en", "tgt": "en"}, details=details,
                        spacy=spacy_pipeline(spacy_model) if source == "spacy" else None)
        recipe.write(pair_dir)
        recipes[pair_name(task, source)] = recipe.to_json()
    if output_trees:
        recipes[f"{task}-output-trees"] = write_output_trees(out, task, splits, gold, stats,
                                                             seed, workers, binarise, progress)
    if language_model:
        progress(f"{out / task}-lm: one sequence an example")
        details = {"task": task, "trees": "gold", "gold_trees": "trees",
                   **generated(splits, stats, seed)}
        recipes[f"{task}-lm"] = write_language_model_task(out, task, splits, gold, details,
                                                          workers, binarise)
    return recipes


def write_output_trees(out: Path, task: str, splits: dict, gold: dict[str, list[str]],
                       stats: dict, seed: int, workers: int = 1, binarise: bool = True,
                       progress=print) -> dict:
    """``$DATA/TASK-output-trees`` (see the module docstring; ``gold``: ``gold_lines``); its
    recipe.json."""
    if task != "tense":
        raise FairseqTreeError(f"--output-trees: the grammar writes target trees for tense "
                               f"only, not {task}")
    pair_dir = out / f"{task}-output-trees"
    progress(f"{pair_dir}: gold source and target trees")
    write_pairs(pair_dir, splits, gold)
    for split in SPLITS:
        write_lines(pair_dir / "trees" / f"{split}.tgt",
                    (format_bracketed(hg.tense_target_tree(tree)) for tree in splits[split]))
    if binarise:
        preprocess_folder(pair_dir, test=("test", "gen"), joined_dictionary=True,
                          workers=workers, target_trees=True)
    details = {
        "pair": f"{task}-output-trees", "task": task, "trees": "gold", "gold_trees": "trees",
        "target_trees": "gold", **generated(splits, stats, seed),
    }
    recipe = Recipe("translation", TextSteps(tokenize="none"), src="src", tgt="tgt",
                    languages={"src": "en", "tgt": "en"}, details=details)
    recipe.write(pair_dir)
    return recipe.to_json()


def write_language_model_task(out: Path, task: str, splits: dict, gold: dict[str, list[str]],
                              details: dict, workers: int = 1, binarise: bool = True) -> dict:
    """``$DATA/TASK-lm`` (see the module docstring; ``gold``: ``gold_lines``); its
    recipe.json."""
    from fairseq import options
    from fairseq_cli import preprocess

    pair_dir = out / f"{task}-lm"
    for split in SPLITS:
        write_lines(pair_dir / "lm" / f"{split}.txt",
                    (" ".join([*hg.leaves(tree), *hg.target(tree)]) for tree in splits[split]))
    for split, lines in gold.items():
        write_lines(pair_dir / "trees" / f"{split}.src", lines)
    if binarise:
        lm = pair_dir / "lm"
        preprocess.main(options.get_preprocessing_parser().parse_args([
            "--only-source", "--trainpref", str(lm / "train.txt"),
            "--validpref", str(lm / "valid.txt"),
            "--testpref", f"{lm / 'test.txt'},{lm / 'gen.txt'}",
            "--destdir", str(pair_dir / "data-bin"), "--workers", str(workers)]))
    recipe = {"kind": "language_model", **details, "pair": f"{task}-lm",
              "sequence": "the source tokens (sentence and marker), then the target tokens"}
    (pair_dir / "recipe.json").write_text(json.dumps(recipe, indent=2) + "\n", encoding="utf-8")
    return recipe


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="root folder (like $DATA)")
    parser.add_argument("--task", choices=hg.TASKS, action="append",
                        help="tense, question (repeatable; default both)")
    parser.add_argument("--trees", nargs="+", choices=TREE_SOURCES,
                        default=["gold", "right-branching"],
                        help="tree sources, a folder each (spacy: tense only makes sense with an "
                        "English pipeline, --spacy-model)")
    parser.add_argument("--spacy-model", help="the English spaCy pipeline of --trees spacy")
    for split in SPLITS:
        parser.add_argument(f"--{split}", type=int, default=SIZES[split],
                            help=f"examples (default {SIZES[split]:,})")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=1, help="binarization workers")
    parser.add_argument("--no-binarize", action="store_true", help="text files only")
    parser.add_argument("--output-trees", action="store_true",
                        help="also tense-output-trees: the gold folder with the target's gold "
                        "trees, for tree_translation --target-trees")
    parser.add_argument("--language-model", action="store_true",
                        help="also TASK-lm: source and target as one sequence, for fairseq's "
                        "language_modeling task")
    args = parser.parse_args(argv)
    if "spacy" in args.trees and not args.spacy_model:
        parser.error("--trees spacy needs --spacy-model (an installed English pipeline)")
    sizes = {split: getattr(args, split) for split in SPLITS}
    started = time.perf_counter()
    recipes = {}
    try:
        for task in args.task or list(hg.TASKS):
            recipes.update(write_task(args.out, task, args.trees, sizes, args.seed,
                                      args.spacy_model, args.workers, not args.no_binarize,
                                      progress=lambda line: print(line, file=sys.stderr),
                                      language_model=args.language_model,
                                      output_trees=args.output_trees and task == "tense"))
    except (ParserUnavailable, FairseqTreeError) as error:
        sys.exit(f"error: {error}")
    for pair, recipe in recipes.items():
        print(pair, json.dumps(recipe["generator"]["stats"]["gen"]))
    print(f"wrote {', '.join(str(args.out / pair) for pair in recipes)} in "
          f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
    return recipes


if __name__ == "__main__":
    main()
