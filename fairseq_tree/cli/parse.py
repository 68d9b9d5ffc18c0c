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
``fairseq_tree.parsing``, the work on the files in ``fairseq_tree.parsing.files``.
"""

import argparse
import sys
from collections.abc import Sequence
from typing import Optional

from fairseq_tree.cli.console import run_console
from fairseq_tree.errors import CliError
from fairseq_tree.line_files import STDIO
from fairseq_tree.parsing import ParserUnavailable
from fairseq_tree.parsing.files import parse_file
from fairseq_tree.parsing.options import add_backend_args, backend_options

PROG = "fairseq-tree-parse"


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


def run(args):
    """Parse ``--input`` into ``--output``, appending after the lines already there."""
    if args.workers < 1 or args.batch_size < 1:
        raise CliError("--workers and --batch-size must be at least 1")
    if args.conllu and args.parser != "spacy":
        raise CliError(f"--conllu needs a dependency parser (--parser spacy), not {args.parser}")
    if args.conllu and args.output == STDIO:
        raise CliError("--conllu needs --output FILE (the two files are resumed together)")
    summary = parse_file(args.input, args.output, args.parser, args.lang, backend_options(args),
                         tokenize=args.tokenize,
                         aggressive_dash_splits=args.aggressive_dash_splits,
                         workers=args.workers, batch_size=args.batch_size, conllu=args.conllu)
    print(f"{PROG}: {summary.report()}", file=sys.stderr)


def cli_main(argv=None):
    """Console entry point: errors end the run with one line "fairseq-tree-parse: error: ..."."""
    run_console(PROG, get_parser(), run, argv, errors=(ParserUnavailable,))


if __name__ == "__main__":
    cli_main()
