"""fairseq-tree-classify: classify raw sentences with a checkpoint of the tree_classification task.

    fairseq-tree-classify --recipe data/agreement \\
        --path checkpoints/agreement/roberta/checkpoint_best.pt --input prefixes.txt --cpu
    fairseq-tree-classify --recipe data/rt-snippets --view 2-class --path CKPT < snippets.txt
    fairseq-tree-classify data-bin/sst2 --path CKPT --parser stanza --trees < trees.txt

Each input line goes through the steps that made the recipe's trees (``recipe.json``): its
tokenization, its parser (with the recorded arguments and spaCy pipeline), BPE on each leaf with
its codes; ``--trees`` reads bracketed trees (tokenized) instead. A model of sentence pairs
(SICK, MSRP) reads two sentences a line, a TAB between them. One output line per input line, in
order: the class's name where the recipe names its classes ("plural (VBP)", "positive", ...;
``--symbols``: the class symbol, 0, 1, ..., in class order, as without a recipe), a TAB, its
probability (``--probabilities``: every class's, in class order). A line that cannot be
classified (empty, not a tree, longer than the model accepts) ends the run with one line
naming it (FILE:LINE), as does a parser or spaCy pipeline that is missing. A command line over the Python API,
``fairseq_tree.classification_hub.from_pretrained`` and ``predict``.
"""

import argparse
import sys

from fairseq_tree.classification_hub import from_pretrained
from fairseq_tree.cli.console import run_console
from fairseq_tree.cli.inference_options import add_inference_args, load_hub
from fairseq_tree.data.progress import Progress
from fairseq_tree.line_files import batched, decode_line, numbered_lines, open_output
from fairseq_tree.parsing import ParserUnavailable

def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fairseq-tree-classify",
                                     description=__doc__.split("\n")[0])
    add_inference_args(parser, "a classification recipe's output folder: its recipe.json gives "
                       "the data folder, class names, BPE codes, parser and tokenization")
    parser.add_argument("--view", metavar="NAME",
                        help="the recipe's task (5-class, 2-class, ...; default: the one whose "
                        "data-bin the checkpoint was trained on, or the only one)")
    parser.add_argument("--probabilities", action="store_true",
                        help="print every class's probability after the class, in class order")
    parser.add_argument("--symbols", action="store_true",
                        help="print the class symbols (0, 1, ...), not the recipe's class names")
    return parser


def load(args):
    """The hub of ``--path`` (``classification_hub.from_pretrained``)."""
    return load_hub(args, from_pretrained, view=args.view, batch_size=args.batch_size,
                    raw_text_refused="--trees" if args.trees else None)


def output_line(prediction, every_class: bool, symbols: bool = False) -> str:
    """The class's name (its symbol with ``symbols`` or where the recipe names no class) and its
    probability (or every class's), TAB-separated."""
    values = prediction.probabilities.values() if every_class else [prediction.probability]
    label = prediction.label if symbols or prediction.name is None else prediction.name
    return "\t".join([label, *(f"{p:.6f}" for p in values)])


def input_line(text: str, pairs: bool):
    """One input: the line, or for sentence pairs its two TAB-separated sentences."""
    return tuple(text.split("\t")) if pairs else text


def classify(args):
    """Classify ``--input`` into ``--output``, one line each, in order."""
    hub = load(args)
    pairs, lines = hub.task.sentence_pairs, 0
    with open_output(args.output) as sink, Progress("classifying", unit="sentences",
                                                    interval=1000) as progress:
        for batch in batched(numbered_lines(args.input), args.batch_size):
            texts = [input_line(decode_line(raw, where).rstrip("\r\n"), pairs)
                     for where, raw in batch]
            predictions = hub.predict(texts, trees=args.trees, names=[where for where, _ in batch])
            sink.write("".join(output_line(p, args.probabilities, args.symbols) + "\n"
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
