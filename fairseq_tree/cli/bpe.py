"""fairseq-tree-bpe: learn and apply subword segmentation on tree leaves (and target text).

    fairseq-tree-bpe learn --method subword-nmt --symbols 32000 \\
        --trees train.en --text train.de --output bpe.codes
    fairseq-tree-bpe apply --codes bpe.codes --input train.en --output train.bpe.en
    fairseq-tree-bpe apply --codes bpe.codes --text --input train.de --output train.bpe.de

Learning reads the leaves of the tree files plus the text files, so source and target share one
model (the joint vocabulary of the paper). Applying to trees segments every leaf on its own and
turns a split word into a node over its pieces (``fairseq_tree.trees.subwords``), written back as
one bracketed tree per line; ``--text`` segments plain lines (``--first-piece``: one unit per
word, for the constituent_transformer masked LM). subword-nmt and sentencepiece do
the segmenting. Lines are split on "\\n" only and read as UTF-8, line by line, so that a bad
line is reported (or, with ``--skip-invalid``, copied through) without losing line alignment.

The work is done by ``fairseq_tree.data.bpe`` (``learn_codes``, ``apply_codes``,
``segment_file``), which Python callers use directly.
"""

import argparse
import sys

from fairseq_tree.cli.console import run_console
from fairseq_tree.data.bpe import (
    SENTENCEPIECE,
    SUBWORD_NMT,
    build_segmenter,
    learn_codes,
    segment_file,
)
from fairseq_tree.errors import CliError
from fairseq_tree.line_files import STDIO


def add_learn_args(learn: argparse.ArgumentParser):
    learn.add_argument("--method", choices=[SUBWORD_NMT, SENTENCEPIECE], default=SUBWORD_NMT)
    learn.add_argument("--symbols", type=int, required=True, metavar="N",
                       help="subword-nmt: number of merge operations; sentencepiece: vocabulary size")
    learn.add_argument("--trees", nargs="*", default=[], metavar="FILE",
                       help="bracketed tree files (one tree per line); their leaves are read")
    learn.add_argument("--text", nargs="*", default=[], metavar="FILE", help="plain text files")
    learn.add_argument("--output", required=True, metavar="PATH",
                       help="subword-nmt: codes file; sentencepiece: model prefix "
                       "(writes PATH.model and PATH.vocab)")
    learn.add_argument("--min-frequency", type=int, default=2, metavar="N",
                       help="subword-nmt: stop when no pair occurs N times")
    learn.add_argument("--character-coverage", type=float, default=1.0,
                       help="sentencepiece: share of characters covered by the model")
    # nmt_nfkc (sentencepiece's default) rewrites characters (e.g. the ligature "ﬁ" as "fi"), so
    # the pieces of a leaf would no longer spell the leaf; identity keeps every token verbatim.
    learn.add_argument("--normalization-rule", default="identity",
                       help="sentencepiece normalization_rule_name (default: identity)")
    learn.add_argument("--skip-invalid", action="store_true",
                       help="ignore malformed tree lines and lines that are not UTF-8")


def add_apply_args(apply: argparse.ArgumentParser):
    model = apply.add_mutually_exclusive_group(required=True)
    model.add_argument("--codes", metavar="FILE", help="subword-nmt codes")
    model.add_argument("--sentencepiece-model", metavar="FILE", help="sentencepiece model")
    apply.add_argument("--vocabulary", metavar="FILE",
                       help="subword-nmt: only produce pieces in this vocabulary (as apply-bpe)")
    apply.add_argument("--vocabulary-threshold", type=int, default=None, metavar="N",
                       help="subword-nmt: vocabulary entries seen fewer than N times do not count")
    apply.add_argument("--text", action="store_true", help="input is plain text, not trees")
    apply.add_argument("--first-piece", action="store_true",
                       help="with --text: one unit per word, its first piece (the text a "
                       "constituent_transformer masked LM reads, as in Wang et al.'s code)")
    apply.add_argument("--input", default=STDIO, metavar="FILE", help="default: standard input")
    apply.add_argument("--output", default=STDIO, metavar="FILE", help="default: standard output")
    apply.add_argument(
        "--skip-invalid", action="store_true",
        help="copy malformed lines (bad trees, empty tree lines, invalid UTF-8) through unchanged, "
        "keeping line alignment, and count them instead of stopping; fairseq-tree-preprocess "
        "then rejects or skips them",
    )


def get_parser() -> argparse.ArgumentParser:
    """The ``learn`` / ``apply`` command line."""
    parser = argparse.ArgumentParser(prog="fairseq-tree-bpe", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    add_learn_args(sub.add_parser("learn", help="learn one joint model from tree leaves and text"))
    add_apply_args(sub.add_parser("apply", help="segment tree leaves (or, with --text, lines)"))
    return parser


def learn(args):
    """Learn one joint subword model from tree leaves and text lines."""
    if not args.trees and not args.text:
        raise CliError("give at least one --trees or --text file to learn from")
    learn_codes(args.output, args.symbols, args.trees, args.text, method=args.method,
                min_frequency=args.min_frequency, character_coverage=args.character_coverage,
                normalization_rule=args.normalization_rule, skip_invalid=args.skip_invalid)


def apply(args):
    """Segment every line of ``--input`` into ``--output``, keeping line alignment."""
    if args.first_piece and not args.text:
        raise CliError("--first-piece works with --text only")
    if args.vocabulary and not args.codes:
        raise CliError("--vocabulary works with --codes (subword-nmt) only")
    segment = build_segmenter(args.codes, args.sentencepiece_model, args.vocabulary,
                              args.vocabulary_threshold)
    stats = segment_file(segment, args.input, args.output, text=args.text,
                         first_piece=args.first_piece, skip_invalid=args.skip_invalid)
    print(stats.report(), file=sys.stderr)


def cli_main(argv=None):
    """Console entry point: errors end the run with one line "fairseq-tree-bpe: error: ..."."""
    run_console("fairseq-tree-bpe", get_parser(),
                lambda args: learn(args) if args.command == "learn" else apply(args), argv)


if __name__ == "__main__":
    cli_main()
