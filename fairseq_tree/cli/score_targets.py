"""``python -m fairseq_tree.cli.score_targets K < scores > distributions``: one score in [1, K]
per input line in, its target distribution over 1..K out (``data.score_targets``; SICK-R's
``label/{split}.label``)."""

import sys

from fairseq_tree.data.score_targets import sparse_distribution


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not args[0].isdigit() or int(args[0]) < 2:
        sys.exit("usage: python -m fairseq_tree.cli.score_targets K < scores > labels")
    num_classes = int(args[0])
    for lineno, line in enumerate(sys.stdin, start=1):
        try:
            target = sparse_distribution(float(line), num_classes)
        except ValueError as err:
            sys.exit(f"score_targets: error: <stdin>:{lineno}: {err}")
        print(" ".join(f"{value:.6g}" for value in target))


if __name__ == "__main__":
    main()
