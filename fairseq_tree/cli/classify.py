"""fairseq-tree-classify: classify raw sentences with a checkpoint of the tree_classification task.

    fairseq-tree-classify --recipe data/agreement \\
        --path checkpoints/agreement/roberta/checkpoint_best.pt --input prefixes.txt --cpu
    fairseq-tree-classify --recipe data/rt-snippets --view 2-class --path CKPT < snippets.txt
    fairseq-tree-classify data-bin/sst2 --path CKPT --parser stanza --trees < trees.txt

Each input line goes through the steps that made the recipe's trees (``recipe.json``): its
tokenization, its parser (with the recorded arguments and spaCy pipeline), BPE on each leaf with
its codes; ``--trees`` reads bracketed trees (tokenized) instead. A model of sentence pairs
(SICK, MSRP) reads two sentences a line, a TAB between them. One output line per input line, in
order: the class symbol (as in the recipe's class list: 0, 1, ...), a TAB, its probability
(``--probabilities``: every class's, in class order). A line that cannot be classified (empty,
not a tree, longer than the model accepts) ends the run with one line naming it (FILE:LINE), as
does a parser or spaCy pipeline that is missing. A command line over the Python API,
``fairseq_tree.classification_hub.from_pretrained`` and ``predict``.
"""

import argparse
import os
import sys

from fairseq_tree.cli.console import (
    STDIO,
    CliError,
    batched,
    decode_line,
    numbered_lines,
    open_output,
    run_console,
)
from fairseq_tree.cli.parse import add_tokenize_args
from fairseq_tree.data.progress import Progress
from fairseq_tree.parsing import ParserUnavailable
from fairseq_tree.parsing.options import add_backend_args, backend_options

RECIPE_HELP = "the recipe's (recipe.json), else"


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fairseq-tree-classify",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("data", nargs="?",
                        help="the binarized data folder (its dictionaries are used)")
    parser.add_argument("--path", required=True, metavar="FILE", help="model checkpoint")
    parser.add_argument("--recipe", metavar="DIR",
                        help="a classification recipe's output folder: its recipe.json gives the "
                        "data folder, class names, BPE codes, parser and tokenization")
    parser.add_argument("--view", metavar="NAME",
                        help="the recipe's task (5-class, 2-class, ...; default: the one whose "
                        "data-bin the checkpoint was trained on, or the only one)")
    parser.add_argument("--bpe-codes", metavar="FILE", help="subword-nmt codes of the trees")
    parser.add_argument("--trees", action="store_true",
                        help="the input lines are bracketed trees (tokenized): no parsing")
    add_backend_args(parser, default=None, default_help=f"{RECIPE_HELP} stanza")
    add_tokenize_args(parser, default=None, choices=("none", "moses", "spacy"),
                      default_help=f"{RECIPE_HELP} moses")
    parser.add_argument("--normalize-punctuation", action="store_true",
                        help="Moses punctuation normalization before tokenizing (set by the "
                        "recipes that tokenize with Moses)")
    parser.add_argument("--input", default=STDIO, metavar="FILE", help="default: standard input")
    parser.add_argument("--output", default=STDIO, metavar="FILE", help="default: standard output")
    parser.add_argument("--probabilities", action="store_true",
                        help="print every class's probability after the class, in class order")
    parser.add_argument("--batch-size", type=int, default=32, metavar="N",
                        help="sentences parsed and classified together")
    parser.add_argument("--cpu", action="store_true", help="do not use a GPU even if present")
    return parser


def hub_options(args) -> dict:
    """``from_pretrained`` keywords from the command line (``--recipe`` completes them)."""
    if not (args.data or args.recipe):
        raise CliError("missing DATA (or --recipe)")
    return {
        "data_name_or_path": os.path.abspath(args.data) if args.data else None,
        "recipe": args.recipe, "view": args.view,
        "bpe_codes": args.bpe_codes, "parser": args.parser or (None if args.recipe else "stanza"),
        "parser_options": dict(backend_options(args), batch_size=args.batch_size),
        "tokenize": args.tokenize, "normalize": args.normalize_punctuation or None,
        "aggressive": args.aggressive_dash_splits or None, "batch_size": args.batch_size,
    }


def load_hub(args):
    """The checkpoint behind ``TreeClassifierHubInterface``, on the GPU unless ``--cpu``."""
    import torch

    from fairseq_tree.classification_hub import from_pretrained

    path = os.path.abspath(args.path)
    if not os.path.isfile(path):
        raise CliError(f"--path {args.path}: no such checkpoint file")
    options = hub_options(args)
    if args.trees:  # no tokenizer or parser is loaded
        options["raw_text_refused"] = "--trees"
    hub = from_pretrained(os.path.dirname(path), os.path.basename(path), **options)
    if torch.cuda.is_available() and not args.cpu:
        hub.cuda()
    return hub


def output_line(prediction, every_class: bool) -> str:
    """The class symbol and its probability (or every class's), TAB-separated."""
    values = prediction.probabilities.values() if every_class else [prediction.probability]
    return "\t".join([prediction.label, *(f"{p:.6f}" for p in values)])


def input_line(text: str, pairs: bool):
    """One input: the line, or for sentence pairs its two TAB-separated sentences."""
    return tuple(text.split("\t")) if pairs else text


def classify(args):
    """Classify ``--input`` into ``--output``, one line each, in order."""
    hub = load_hub(args)
    pairs, lines = hub.task.sentence_pairs, 0
    with open_output(args.output) as sink, Progress("classifying", unit="sentences",
                                                    interval=1000) as progress:
        for batch in batched(numbered_lines(args.input), args.batch_size):
            texts = [input_line(decode_line(raw, where).rstrip("\r\n"), pairs)
                     for where, raw in batch]
            predictions = hub.predict(texts, trees=args.trees, names=[where for where, _ in batch])
            sink.write("".join(output_line(p, args.probabilities) + "\n"
                               for p in predictions).encode("utf-8"))
            lines += len(batch)
            progress.update(len(batch))
    print(f"fairseq-tree-classify: {lines} lines classified, {hub.flat_fallbacks} parsed as flat "
          "fallback trees", file=sys.stderr)


def cli_main(argv=None):
    """Console entry point: errors end the run with one line "fairseq-tree-classify: error: ..."."""
    run_console("fairseq-tree-classify", get_parser(), classify, argv,
                errors=(ParserUnavailable,))


if __name__ == "__main__":
    cli_main()
