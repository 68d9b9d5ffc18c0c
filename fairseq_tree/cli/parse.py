"""fairseq-tree-parse: sentences in, one bracketed constituency tree per line out.

    fairseq-tree-parse --parser link-grammar --lang en --input train.tok.en --output train.en
    fairseq-tree-parse --parser stanza --lang de --tokenize moses --input raw.de --output trees.de
    fairseq-tree-parse --parser induced --lang fr --induced-checkpoint lm/checkpoint_best.pt \\
        --input train.tok.fr --output train.fr
    fairseq-tree-parse --parser spacy --spacy-model fr_core_news_sm --lang fr --tokenize moses \\
        --input raw.fr --output trees.fr --conllu trees.fr.conllu

The output has exactly one line per input line: a tree whose leaves are the line's tokens
(``(`` ``)`` written ``-LRB-`` ``-RRB-``), an empty line for an empty input line, and a flat
tree ``(ROOT tok ...)`` for a sentence the parser could not parse (counted in the summary by
reason). Writing into an existing ``--output`` resumes: its complete lines are kept and the
input lines they stand for are skipped. ``--conllu`` (a dependency parser: spacy) also writes the
parses the trees were made from, one CoNLL-U sentence per input line (an empty line's place is a
block with only the comment ``# empty input line``), resumed with the trees. Backends live in
``fairseq_tree.parsing``.
"""

import argparse
import collections
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Optional

from fairseq_tree.cli.console import (
    STDIO,
    CliError,
    batched,
    decode_line,
    numbered_lines,
    run_console,
)
from fairseq_tree.data.progress import Progress
from fairseq_tree.parsing import ParserUnavailable
from fairseq_tree.parsing import moses
from fairseq_tree.parsing.options import add_backend_args, backend_options
from fairseq_tree.parsing.pool import parse_batches
from fairseq_tree.trees.dependency import EMPTY_LINE_COMMENT

PROG = "fairseq-tree-parse"
CONLLU_END = b"\n\n"  # a CoNLL-U sentence ends with a blank line


def add_tokenize_args(parser: argparse.ArgumentParser, default: Optional[str] = "none",
                      choices: Sequence[str] = ("none", "moses"),
                      default_help: Optional[str] = None):
    """--tokenize (``choices`` of none, moses and spacy) and the Moses options."""
    parser.add_argument("--tokenize", choices=list(choices), default=default,
                        help="none: lines are whitespace-separated tokens; moses: raw text, "
                        "tokenized with sacremoses (no escaping)"
                        + ("; spacy: the tokenizer of --spacy-model" if "spacy" in choices else "")
                        + f"; default: {default_help or default}")
    parser.add_argument("--aggressive-dash-splits", action="store_true",
                        help="moses: split hyphenated words (well @-@ known)")


def build_tokenizer(args, lang: str, normalize: bool = False,
                    quote: bool = False) -> Callable[[str], list[str]]:
    """line -> tokens, as ``add_tokenize_args`` asked (``parsing.moses.build_tokenizer``)."""
    return moses.build_tokenizer(args.tokenize, lang, normalize=normalize, quote=quote,
                                 aggressive=args.aggressive_dash_splits)


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    add_backend_args(parser)
    parser.add_argument("--lang", required=True, help="source language code (en, de, fr, ...)")
    parser.add_argument("--input", default=STDIO, metavar="FILE", help="default: standard input")
    parser.add_argument("--output", default=STDIO, metavar="FILE",
                        help="default: standard output; an existing file is resumed")
    parser.add_argument("--conllu", metavar="FILE",
                        help="spacy: also write the dependency parses, one CoNLL-U sentence per "
                        "input line (for recursive_multibranch_classifier --dependency, through "
                        "fairseq-tree-preprocess --dependency-heads); resumed with --output")
    add_tokenize_args(parser)
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="parser processes, each with its own backend (link-grammar, "
                        "corenlp); keep 1 for stanza on a GPU")
    parser.add_argument("--batch-size", type=int, default=64, metavar="N",
                        help="sentences per parser call; output is flushed after each batch")
    return parser


def resume_point(path: str) -> int:
    """Complete lines already in ``path`` (0 for stdout or a new file); a last line without its
    line break, from an interrupted run, is cut off."""
    if path == STDIO or not os.path.exists(path):
        return 0
    lines, end = 0, 0  # end: offset just after the last line break
    with open(path, "rb+") as handle:
        offset = 0
        for block in iter(lambda: handle.read(1 << 20), b""):
            if (count := block.count(b"\n")):
                lines += count
                end = offset + block.rindex(b"\n") + 1
            offset += len(block)
        handle.truncate(end)
    return lines


def conllu_sentences(path: str) -> int:
    """Complete sentences of a CoNLL-U file as ``--conllu`` writes it (0 for a missing file):
    every sentence ``conllu_block`` writes ends with ``CONLLU_END``."""
    if not os.path.exists(path):
        return 0
    with open(path, "rb") as handle:
        return handle.read().count(CONLLU_END)


def keep_first(path: str, count: int, terminator: bytes):
    """Cut ``path`` after its first ``count`` records, each ending with ``terminator``."""
    with open(path, "rb+") as handle:
        data, end = handle.read(), 0
        for _ in range(count):
            end = data.index(terminator, end) + len(terminator)
        handle.truncate(end)


def resume_outputs(args) -> int:
    """Input lines already done: the complete lines of --output and, with --conllu, as many
    complete CoNLL-U sentences; both files are cut back to that many (which also drops a sentence
    an interrupted run left half-written)."""
    lines = resume_point(args.output)
    if not args.conllu:
        return lines
    done = min(lines, conllu_sentences(args.conllu))
    if done < lines:
        keep_first(args.output, done, b"\n")
    if os.path.exists(args.conllu):
        keep_first(args.conllu, done, CONLLU_END)
    return done


def conllu_block(result) -> str:
    """One input line's CoNLL-U sentence, its blank line included (``CONLLU_END``)."""
    return f"{result.conllu or EMPTY_LINE_COMMENT}\n\n"


def sentences(args, skip: int) -> Iterator[list[str]]:
    """Tokens of every input line after the first ``skip``; FILE:LINE errors for bad UTF-8."""
    tokenize = build_tokenizer(args, args.lang)
    seen = 0
    for where, raw in numbered_lines(args.input):
        seen += 1
        if seen > skip:
            yield tokenize(decode_line(raw, where)) if raw.strip() else []
    if seen < skip:
        raise CliError(f"{args.output} already has {skip} lines but the input has only {seen}: "
                       "it is not the output of this input")


class Summary:
    """Counts for the last line on stderr."""

    def __init__(self, resumed: int):
        self.resumed, self.lines, self.empty = resumed, 0, 0
        self.fallbacks: collections.Counter = collections.Counter()

    def add(self, results):
        for result in results:
            self.lines += 1
            self.empty += not result.tree
            if result.fallback:
                self.fallbacks[result.fallback] += 1

    def report(self) -> str:
        fallen = sum(self.fallbacks.values())
        reasons = ", ".join(f"{n} {why}" for why, n in self.fallbacks.most_common())
        return (f"{PROG}: {self.lines} lines parsed ({self.resumed} already in the output were "
                f"skipped): {self.lines - fallen - self.empty} trees, {fallen} flat fallbacks"
                f"{f' ({reasons})' if reasons else ''}, {self.empty} empty lines")


def run(args):
    """Parse ``--input`` into ``--output``, appending after the lines already there."""
    if args.workers < 1 or args.batch_size < 1:
        raise CliError("--workers and --batch-size must be at least 1")
    if args.conllu and args.parser != "spacy":
        raise CliError(f"--conllu needs a dependency parser (--parser spacy), not {args.parser}")
    if args.conllu and args.output == STDIO:
        raise CliError("--conllu needs --output FILE (the two files are resumed together)")
    done = resume_outputs(args)
    options = dict(backend_options(args), batch_size=args.batch_size)
    spec = (args.parser, args.lang, options)
    summary = Summary(done)
    name = "<stdin>" if args.input == STDIO else args.input
    sink = sys.stdout.buffer if args.output == STDIO else open(args.output, "ab")
    parses = open(args.conllu, "ab") if args.conllu else None
    try:
        with Progress(f"parsing {name}", unit="sentences", interval=1000) as progress:
            batches = batched(sentences(args, done), args.batch_size)
            for results in parse_batches(spec, batches, args.workers):
                if parses is not None:  # first: a tree line is never ahead of its parse
                    parses.write("".join(map(conllu_block, results)).encode("utf-8"))
                    parses.flush()
                sink.write("".join(r.tree + "\n" for r in results).encode("utf-8"))
                sink.flush()  # an interrupted run loses at most the batch being parsed
                summary.add(results)
                progress.update(len(results))
    finally:
        if sink is not sys.stdout.buffer:
            sink.close()
        if parses is not None:
            parses.close()
    print(summary.report(), file=sys.stderr)


def cli_main(argv=None):
    """Console entry point: errors end the run with one line "fairseq-tree-parse: error: ..."."""
    run_console(PROG, get_parser(), run, argv, errors=(ParserUnavailable,))


if __name__ == "__main__":
    cli_main()
