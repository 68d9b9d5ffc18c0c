"""What fairseq-tree-translate and fairseq-tree-classify share: the text options (the names of
``TextSteps``), the checkpoint, data and recipe options, and the one load step over a hub's
``from_pretrained``. A text option left unset takes the recipe's value (``--recipe``), else the
default of ``TextSteps``."""

import argparse
import os
from typing import Callable

from fairseq_tree.cli.parse import add_tokenize_args
from fairseq_tree.errors import CliError
from fairseq_tree.line_files import STDIO
from fairseq_tree.parsing.options import add_backend_args, given_backend_options

RECIPE_DEFAULT = "the recipe's (--recipe: recipe.json, with the parser arguments and spaCy " \
                 "pipeline it recorded), else"


def add_inference_args(parser: argparse.ArgumentParser, recipe_help: str):
    """DATA, --path, --recipe, --trees, the text options, --input/--output, --batch-size, --cpu."""
    parser.add_argument("data", nargs="?",
                        help="the binarized data folder (its dictionaries are used)")
    parser.add_argument("--path", required=True, metavar="FILE", help="model checkpoint")
    parser.add_argument("--recipe", metavar="DIR", help=recipe_help)
    parser.add_argument("--trees", action="store_true",
                        help="the input lines are bracketed trees (tokenized): no parsing")
    add_backend_args(parser, default=None, default_help=f"{RECIPE_DEFAULT} stanza")
    add_tokenize_args(parser, default=None, choices=("none", "moses", "spacy"),
                      default_help=f"{RECIPE_DEFAULT} moses")
    parser.add_argument("--normalize-punctuation", action="store_true",
                        help="Moses punctuation normalization and removal of non-printing "
                        "characters before tokenizing")
    bpe = parser.add_mutually_exclusive_group()
    bpe.add_argument("--bpe-codes", metavar="FILE", help="subword-nmt codes of the training data")
    bpe.add_argument("--sentencepiece-model", metavar="FILE", help="sentencepiece model")
    parser.add_argument("--input", default=STDIO, metavar="FILE", help="default: standard input")
    parser.add_argument("--output", default=STDIO, metavar="FILE", help="default: standard output")
    parser.add_argument("--batch-size", type=int, default=32, metavar="N",
                        help="sentences parsed and run through the model together")
    parser.add_argument("--cpu", action="store_true", help="do not use a GPU even if present")


def text_options(args) -> dict:
    """The ``TextSteps`` the command line gives (None, or a flag left off: the recipe's)."""
    parser = None if args.trees else args.parser
    if parser is None and not args.trees and not args.recipe:
        parser = "stanza"
    return {
        "parser": parser,
        "parser_options": dict(given_backend_options(args), batch_size=args.batch_size),
        "tokenize": args.tokenize, "normalize_punctuation": args.normalize_punctuation,
        "aggressive_dash_splits": args.aggressive_dash_splits,
        "quote": getattr(args, "quote", False), "lowercase": getattr(args, "lowercase", False),
        "bpe_codes": absolute(args.bpe_codes),
        "sentencepiece_model": absolute(args.sentencepiece_model),
    }


def absolute(path):
    return os.path.abspath(path) if path else None


def load_hub(args, from_pretrained: Callable, **keywords):
    """The checkpoint of ``--path`` behind a hub (``from_pretrained``), with the data folder,
    the recipe and the text options; on the GPU unless ``--cpu``."""
    import torch

    path = os.path.abspath(args.path)
    if not os.path.isfile(path):
        raise CliError(f"--path {args.path}: no such checkpoint file")
    if not (args.data or args.recipe):
        raise CliError("missing DATA (or --recipe)")
    hub = from_pretrained(os.path.dirname(path), os.path.basename(path),
                          data_name_or_path=absolute(args.data), recipe=args.recipe,
                          **text_options(args), **keywords)
    if not args.trees:
        hub.text.prepare()  # a missing parser or spaCy pipeline said before any input is read
    if torch.cuda.is_available() and not args.cpu:
        hub.cuda()
    return hub
