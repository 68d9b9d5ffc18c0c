"""fairseq-tree-bpe: learn and apply subword segmentation on tree leaves (and target text).

    fairseq-tree-bpe learn --method subword-nmt --symbols 32000 \\
        --trees train.en --text train.de --output bpe.codes
    fairseq-tree-bpe apply --codes bpe.codes --input train.en --output train.bpe.en
    fairseq-tree-bpe apply --codes bpe.codes --text --input train.de --output train.bpe.de

Learning reads the leaves of the tree files plus the text files, so source and target share one
model (the joint vocabulary of the paper). Applying to trees segments every leaf on its own and
turns a split word into a node over its pieces (``fairseq_tree.trees.subwords``); ``--text``
segments plain lines. subword-nmt and sentencepiece do the segmenting.
"""

import argparse
import contextlib
import logging
import os
import sys
from dataclasses import dataclass
from typing import Callable, Iterator, List, TextIO

from fairseq_tree.data.progress import Progress
from fairseq_tree.trees.bracketed import TreeSyntaxError
from fairseq_tree.trees.normal_form import parse_tree, to_bracketed
from fairseq_tree.trees.subwords import split_words

STDIO = "-"


class BadLine(ValueError):
    """A malformed input line, located at FILE:LINE."""


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fairseq-tree-bpe", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    learn = sub.add_parser("learn", help="learn one joint model from tree leaves and text")
    learn.add_argument("--method", choices=["subword-nmt", "sentencepiece"], default="subword-nmt")
    learn.add_argument("--symbols", type=int, required=True, metavar="N",
                       help="subword-nmt: number of merge operations; sentencepiece: vocabulary size")
    learn.add_argument("--trees", nargs="*", default=[], metavar="FILE",
                       help="bracketed tree files (one tree per line); their leaves are read")
    learn.add_argument("--text", nargs="*", default=[], metavar="FILE", help="plain text files")
    learn.add_argument("--output", required=True, metavar="PATH",
                       help="subword-nmt: codes file; sentencepiece: model prefix (PATH.model)")
    learn.add_argument("--min-frequency", type=int, default=2, help="subword-nmt: stop below this pair count")
    learn.add_argument("--character-coverage", type=float, default=1.0, help="sentencepiece option")
    learn.add_argument("--skip-invalid", action="store_true", help="ignore malformed tree lines")

    apply = sub.add_parser("apply", help="segment tree leaves (or, with --text, plain lines)")
    model = apply.add_mutually_exclusive_group(required=True)
    model.add_argument("--codes", metavar="FILE", help="subword-nmt codes")
    model.add_argument("--sentencepiece-model", metavar="FILE", help="sentencepiece model")
    apply.add_argument("--vocabulary", metavar="FILE", help="subword-nmt vocabulary filter")
    apply.add_argument("--vocabulary-threshold", type=int, default=None, metavar="N")
    apply.add_argument("--text", action="store_true", help="input is plain text, not trees")
    apply.add_argument("--input", default=STDIO, metavar="FILE", help="default: standard input")
    apply.add_argument("--output", default=STDIO, metavar="FILE", help="default: standard output")
    apply.add_argument(
        "--skip-invalid", action="store_true",
        help="copy malformed tree lines through unchanged (keeping line alignment) and count "
        "them, instead of stopping; fairseq-tree-preprocess then rejects or skips them",
    )
    return parser


@contextlib.contextmanager
def open_text(path: str, mode: str) -> Iterator[TextIO]:
    """UTF-8 text file or standard stream. A file written here appears under its name only once
    complete: a failed run leaves no half-segmented output behind."""
    if path == STDIO:
        yield sys.stdin if mode == "r" else sys.stdout
    elif mode == "r":
        with open(path, encoding="utf-8") as handle:
            yield handle
    else:
        partial = f"{path}.partial"
        try:
            with open(partial, "w", encoding="utf-8") as handle:
                yield handle
            os.replace(partial, path)
        finally:
            if os.path.exists(partial):
                os.remove(partial)


def display_name(path: str) -> str:
    return "<stdin>" if path == STDIO else path


def read_tree(line: str, path: str, lineno: int):
    if not line.strip():
        raise BadLine(f"{display_name(path)}:{lineno}: empty line (expected a bracketed tree)")
    try:
        return parse_tree(line)
    except TreeSyntaxError as err:
        raise BadLine(f"{display_name(path)}:{lineno}: malformed tree: {err}") from None


def leaf_lines(args) -> Iterator[str]:
    """Training lines for the subword learner: the leaves of every tree, then the text lines."""
    for path in args.trees:
        with open_text(path, "r") as handle:
            for lineno, line in enumerate(handle, start=1):
                try:
                    yield " ".join(read_tree(line, path, lineno).leaves)
                except BadLine:
                    if not args.skip_invalid:
                        raise
    for path in args.text:
        with open_text(path, "r") as handle:
            yield from (line.rstrip("\n") for line in handle)


def learn(args):
    if not args.trees and not args.text:
        raise BadLine("give at least one --trees or --text file to learn from")
    if args.method == "subword-nmt":
        from subword_nmt.learn_bpe import learn_bpe

        with open_text(args.output, "w") as codes:
            learn_bpe(leaf_lines(args), codes, args.symbols, min_frequency=args.min_frequency)
    else:
        import sentencepiece as spm

        spm.SentencePieceTrainer.train(
            sentence_iterator=leaf_lines(args), model_prefix=args.output,
            vocab_size=args.symbols, character_coverage=args.character_coverage,
            model_type="bpe", minloglevel=2,
        )


def build_segmenter(args) -> Callable[[str], List[str]]:
    """word (or line) -> pieces, from subword-nmt codes or a sentencepiece model."""
    if args.codes:
        from subword_nmt.apply_bpe import BPE, read_vocabulary

        vocab = None
        if args.vocabulary:
            with open(args.vocabulary, encoding="utf-8") as handle:
                vocab = read_vocabulary(handle, args.vocabulary_threshold)
        with open(args.codes, encoding="utf-8") as codes:
            bpe = BPE(codes, vocab=vocab)
        return lambda text: bpe.process_line(text).split()
    import sentencepiece as spm

    processor = spm.SentencePieceProcessor(model_file=args.sentencepiece_model)
    return lambda text: processor.encode(text, out_type=str)


@dataclass
class ApplyStats:
    lines: int = 0
    words: int = 0
    pieces: int = 0
    skipped: int = 0

    def report(self) -> str:
        return (f"fairseq-tree-bpe: {self.lines} lines, {self.words} words -> {self.pieces} "
                f"subwords ({self.pieces / max(self.words, 1):.2f} per word), {self.skipped} "
                "malformed lines copied unchanged")


def segment_line(line: str, lineno: int, args, segment, stats: ApplyStats) -> str:
    if args.text:
        pieces = segment(line.rstrip("\n"))
        stats.words += len(line.split())
        stats.pieces += len(pieces)
        return " ".join(pieces)
    try:
        tree = read_tree(line, args.input, lineno)
    except BadLine:
        if not args.skip_invalid:
            raise
        stats.skipped += 1
        return line.rstrip("\n")
    split = split_words(tree, segment)
    stats.words += len(tree.leaves)
    stats.pieces += len(split.leaves)
    return to_bracketed(split)


def apply(args):
    segment = build_segmenter(args)
    stats = ApplyStats()
    with open_text(args.input, "r") as source, open_text(args.output, "w") as sink, Progress(
        f"segmenting {display_name(args.input)}", unit="lines"
    ) as progress:
        for lineno, line in enumerate(source, start=1):
            sink.write(segment_line(line, lineno, args, segment, stats) + "\n")
            stats.lines += 1
            progress.update(1)
    print(stats.report(), file=sys.stderr)


def cli_main(argv=None):
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
                        level=logging.INFO, stream=sys.stderr, force=True)
    args = get_parser().parse_args(argv)
    try:
        learn(args) if args.command == "learn" else apply(args)
    except (BadLine, OSError) as err:
        sys.exit(f"fairseq-tree-bpe: error: {err}")


if __name__ == "__main__":
    cli_main()
