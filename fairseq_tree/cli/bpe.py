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
"""

import argparse
import io
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from fairseq_tree.cli.console import (
    STDIO,
    CliError,
    decode_line,
    numbered_lines,
    open_output,
    run_console,
)
from fairseq_tree.data.progress import Progress
from fairseq_tree.trees.bracketed import TreeSyntaxError
from fairseq_tree.trees.normal_form import NormalTree, parse_tree, to_bracketed
from fairseq_tree.trees.subwords import first_pieces, split_words

SUBWORD_NMT, SENTENCEPIECE = "subword-nmt", "sentencepiece"


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


def read_tree(raw: bytes, where: str) -> NormalTree:
    """The normal form of the tree on one line; an empty or malformed line is a ``CliError``."""
    line = decode_line(raw, where)
    if not line.strip():
        raise CliError(f"{where}: empty line (expected a bracketed tree)")
    try:
        return parse_tree(line)
    except TreeSyntaxError as err:
        raise CliError(f"{where}: malformed tree: {err}") from None


def leaf_lines(args) -> Iterator[str]:
    """Training lines for the subword learner: the leaves of every tree, then the text lines."""
    for path in args.trees:
        for where, raw in numbered_lines(path):
            try:
                yield " ".join(read_tree(raw, where).leaves)
            except CliError:
                if not args.skip_invalid:
                    raise
    for path in args.text:
        for where, raw in numbered_lines(path):
            try:
                yield " ".join(decode_line(raw, where).split())
            except CliError:
                if not args.skip_invalid:
                    raise


def learn(args):
    """Learn one joint subword model from tree leaves and text lines."""
    if not args.trees and not args.text:
        raise CliError("give at least one --trees or --text file to learn from")
    if args.method == SUBWORD_NMT:
        from subword_nmt.learn_bpe import learn_bpe

        codes = io.StringIO()  # small (one line per merge); written only once learning succeeded
        learn_bpe(leaf_lines(args), codes, args.symbols, min_frequency=args.min_frequency)
        with open_output(args.output) as sink:
            sink.write(codes.getvalue().encode("utf-8"))
        return
    import sentencepiece as spm

    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=leaf_lines(args), model_prefix=args.output,
            vocab_size=args.symbols, character_coverage=args.character_coverage,
            normalization_rule_name=args.normalization_rule, model_type="bpe", minloglevel=2,
        )
    except RuntimeError as err:  # sentencepiece reports bad settings and data as RuntimeError
        raise CliError(f"sentencepiece: {err}") from None


def build_segmenter(args) -> Callable[[list[str]], list[str]]:
    """words -> pieces, each word segmented on its own, from subword-nmt codes or a
    sentencepiece model."""
    if args.codes:
        from subword_nmt.apply_bpe import BPE, read_vocabulary

        vocab = None
        if args.vocabulary:
            with open(args.vocabulary, encoding="utf-8") as handle:
                vocab = read_vocabulary(handle, args.vocabulary_threshold)
        with open(args.codes, encoding="utf-8") as codes:
            bpe = BPE(codes, vocab=vocab)
        return bpe.segment_tokens
    if args.vocabulary:
        raise CliError("--vocabulary works with --codes (subword-nmt) only")
    import sentencepiece as spm

    processor = spm.SentencePieceProcessor(model_file=args.sentencepiece_model)
    # One word per call, exactly as for tree leaves; sentencepiece marks each word start with "▁".
    return lambda words: [p for w in words for p in processor.encode(w, out_type=str)]


@dataclass
class ApplyStats:
    """Counts for the summary printed on stderr at the end of ``apply``."""

    lines: int = 0
    words: int = 0
    pieces: int = 0
    skipped: int = 0

    def report(self) -> str:
        return (f"fairseq-tree-bpe: {self.lines} lines, {self.words} words -> {self.pieces} "
                f"subwords ({self.pieces / max(self.words, 1):.2f} per word), {self.skipped} "
                "malformed lines copied unchanged")


def segment_line(raw: bytes, where: str, args, segment, stats: ApplyStats) -> bytes:
    """One segmented output line (without line break) for one input line."""
    try:
        if args.text:
            words = decode_line(raw, where).split()
            pieces = first_pieces(words, segment) if args.first_piece else segment(words)
            text = " ".join(pieces)
        else:
            tree = read_tree(raw, where)
            split = split_words(tree, lambda word: segment([word]))
            words, pieces, text = tree.leaves, split.leaves, to_bracketed(split)
    except CliError:
        if not args.skip_invalid:
            raise
        stats.skipped += 1
        return raw
    stats.words += len(words)
    stats.pieces += len(pieces)
    return text.encode("utf-8")


def apply(args):
    """Segment every line of ``--input`` into ``--output``, keeping line alignment."""
    if args.first_piece and not args.text:
        raise CliError("--first-piece works with --text only")
    segment = build_segmenter(args)
    stats = ApplyStats()
    name = "<stdin>" if args.input == STDIO else args.input
    with open_output(args.output) as sink, Progress(f"segmenting {name}", unit="lines") as progress:
        for where, raw in numbered_lines(args.input):
            sink.write(segment_line(raw, where, args, segment, stats) + b"\n")
            stats.lines += 1
            progress.update(1)
    print(stats.report(), file=sys.stderr)


def cli_main(argv=None):
    """Console entry point: errors end the run with one line "fairseq-tree-bpe: error: ..."."""
    run_console("fairseq-tree-bpe", get_parser(),
                lambda args: learn(args) if args.command == "learn" else apply(args), argv)


if __name__ == "__main__":
    cli_main()
