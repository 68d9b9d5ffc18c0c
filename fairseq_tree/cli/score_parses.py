"""fairseq-tree-score-parses: unlabeled span F1 of predicted trees against gold trees, with the
left-branching, right-branching and random-tree baselines on the same sentences.

    fairseq-tree-score-parses --gold wsj/test.gold --pred test.induced [--json scores.json]

Both files hold one bracketed tree per line, line by line the same sentences with the same
leaves. The protocol (``fairseq_tree.trees.evaluation``) is the one Wang et al. (2019) report:
punctuation removed, trivial spans excluded, sentence-level F1 averaged; corpus-level F1 is
printed too. A line empty in both files is skipped; random trees are drawn ``--random-runs``
times (median and maximum reported, as the paper's tables). Python callers use
``fairseq_tree.trees.evaluation.score_files``, which does the work.
"""

import argparse
import json

from fairseq_tree.cli.console import run_console
from fairseq_tree.errors import CliError
from fairseq_tree.line_files import open_output
from fairseq_tree.trees.evaluation import score_files

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


def score(args) -> dict:
    """Scores of the predictions and of the baselines, as printed."""
    if args.random_runs < 1:
        raise CliError("--random-runs must be at least 1")
    return score_files(args.gold, args.pred, random_runs=args.random_runs, seed=args.seed)


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
