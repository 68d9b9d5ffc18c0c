"""fairseq-tree-score-parses: unlabeled span F1 of predicted trees against gold trees, with the
left-branching, right-branching and random-tree baselines on the same sentences.

    fairseq-tree-score-parses --gold wsj/test.gold --pred test.induced [--json scores.json]

Both files hold one bracketed tree per line, line by line the same sentences with the same
leaves. The protocol (``fairseq_tree.trees.evaluation``) is the one Wang et al. (2019) report:
punctuation removed, trivial spans excluded, sentence-level F1 averaged; corpus-level F1 is
printed too. A line empty in both files is skipped; random trees are drawn ``--random-runs``
times (median and maximum reported, as the paper's tables).
"""

import argparse
import itertools
import json
import random
import statistics
import sys
from collections.abc import Iterator

from fairseq_tree.cli.console import CliError, decode_line, numbered_lines, open_output, run_console
from fairseq_tree.trees.bracketed import TreeSyntaxError
from fairseq_tree.trees.evaluation import (
    SpanScore,
    kept_words,
    left_branching,
    nontrivial_spans,
    random_tree,
    right_branching,
)
from fairseq_tree.trees.normal_form import NormalTree, parse_tree

PROG = "fairseq-tree-score-parses"


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--gold", required=True, metavar="FILE", help="gold trees, one per line")
    parser.add_argument("--pred", required=True, metavar="FILE",
                        help="predicted trees, one per line, same sentences")
    parser.add_argument("--random-runs", type=int, default=5, metavar="N",
                        help="random-tree baselines drawn (default 5)")
    parser.add_argument("--seed", type=int, default=1, help="of the first random run")
    parser.add_argument("--json", metavar="FILE", help="also write the scores here")
    return parser


def read_tree(raw: bytes, where: str) -> NormalTree | None:
    """The tree of one line, None for an empty line; FILE:LINE errors for a malformed one."""
    line = decode_line(raw, where)
    if not line.strip():
        return None
    try:
        return parse_tree(line)
    except (TreeSyntaxError, ValueError) as err:
        raise CliError(f"{where}: malformed tree: {err}") from None


def tree_pairs(gold_path: str, pred_path: str) -> Iterator[tuple[NormalTree, NormalTree]]:
    """(gold, pred) trees line by line; line counts, emptiness and leaves must agree."""
    pairs = itertools.zip_longest(numbered_lines(gold_path), numbered_lines(pred_path))
    for gold_line, pred_line in pairs:
        if gold_line is None or pred_line is None:
            longer, where = (pred_path, pred_line[0]) if gold_line is None else (gold_path,
                                                                               gold_line[0])
            raise CliError(f"{where}: {longer} has more lines than the other file")
        (gold_where, gold_raw), (pred_where, pred_raw) = gold_line, pred_line
        gold, pred = read_tree(gold_raw, gold_where), read_tree(pred_raw, pred_where)
        if (gold is None) != (pred is None):
            empty = gold_where if gold is None else pred_where
            raise CliError(f"{empty}: empty line, but the other file has a tree there")
        if gold is None:
            continue
        if gold.leaves != pred.leaves:
            raise CliError(f"{pred_where}: leaves differ from {gold_where} "
                           f"({len(pred.leaves)} vs {len(gold.leaves)} words: "
                           f"{first_difference(pred.leaves, gold.leaves)})")
        yield gold, pred


def first_difference(pred: list[str], gold: list[str]) -> str:
    for i, (p, g) in enumerate(zip(pred, gold)):
        if p != g:
            return f"word {i + 1} is {p!r}, gold {g!r}"
    return f"word {min(len(pred), len(gold)) + 1} is missing from one"


def score(args) -> dict:
    """Scores of the predictions and of the baselines, as printed."""
    if args.random_runs < 1:
        raise CliError("--random-runs must be at least 1")
    model, left, right = SpanScore(), SpanScore(), SpanScore()
    randoms = [SpanScore() for _ in range(args.random_runs)]
    rngs = [random.Random(args.seed + run) for run in range(args.random_runs)]
    words = []
    for gold, pred in tree_pairs(args.gold, args.pred):
        keep = kept_words(gold)
        gold_spans, n = nontrivial_spans(gold, keep), sum(keep)
        model.add(nontrivial_spans(pred, keep), gold_spans)
        left.add(left_branching(n), gold_spans)
        right.add(right_branching(n), gold_spans)
        for rng, scores in zip(rngs, randoms):
            scores.add(random_tree(n, rng), gold_spans)
        words.append(n)
    if not words:
        raise CliError(f"{args.gold}: no trees to score")
    random_reports = [scores.report() for scores in randoms]
    return {"gold": args.gold, "pred": args.pred, "sentences": len(words),
            "mean_words": sum(words) / len(words), "pred_scores": model.report(),
            "left_branching": left.report(), "right_branching": right.report(),
            "random": {key: {"median": statistics.median(r[key] for r in random_reports),
                             "max": max(r[key] for r in random_reports)}
                       for key in ("sentence_f1", "corpus_f1")},
            "random_runs": args.random_runs, "seed": args.seed}


def table(scores: dict) -> list[str]:
    rows = [("predicted", scores["pred_scores"]), ("left-branching", scores["left_branching"]),
            ("right-branching", scores["right_branching"])]
    lines = [f"{scores['sentences']} sentences, {scores['mean_words']:.1f} words on average "
             "(punctuation removed)",
             f"{'trees':<26} {'sentence F1':>11} {'corpus F1':>9}"]
    lines += [f"{name:<26} {row['sentence_f1']:>11.2f} {row['corpus_f1']:>9.2f}"
              for name, row in rows]
    rand = scores["random"]
    lines.append(f"{'random (median of ' + str(scores['random_runs']) + ')':<26} "
                 f"{rand['sentence_f1']['median']:>11.2f} {rand['corpus_f1']['median']:>9.2f}")
    return lines


def run(args):
    scores = score(args)
    print("\n".join(table(scores)))
    if args.json:
        with open_output(args.json) as sink:
            sink.write(json.dumps(scores, indent=2).encode("utf-8") + b"\n")


def cli_main(argv=None):
    """Console entry point: errors end the run with one line "fairseq-tree-score-parses: ..."."""
    run_console(PROG, get_parser(), run, argv)


if __name__ == "__main__":
    cli_main()
