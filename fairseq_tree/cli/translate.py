"""fairseq-tree-translate: translate raw sentences with a checkpoint of the tree_translation task.

    fairseq-tree-translate data-bin/en-fr --path checkpoints/checkpoint_best.pt \\
        --source-lang en --target-lang fr --bpe-codes bpe/codes --parser link-grammar \\
        < raw.en > translations.fr
    fairseq-tree-translate --recipe data/iwslt14-de-en --parser stanza \\
        --path checkpoints/iwslt14-de-en/tree2seq/averaged-last10.pt < raw.de > out.en

Each input line goes through the steps that made the training data: Moses tokenisation
(sacremoses), parsing into a constituency tree (``fairseq-tree-parse``'s backends), lowercasing
of the leaves where the training data was lowercased, BPE on each leaf, then beam search and
detokenisation. One output line per input line, in order: an empty line gives an empty line, and
a sentence longer than the model accepts gives an empty line and a warning naming its line.
``--trees`` reads bracketed trees (already tokenised) instead of raw text. A command line over
the Python API, ``fairseq_tree.hub.from_pretrained`` (``Tree2SeqModel.from_pretrained``).

``--score-targets TGT`` scores given translations instead of translating: for each line pair of
``--input`` and TGT, the model's log-probability of the target (natural log, summed over its
subword tokens and end of sentence, as ``fairseq-generate --score-reference`` computes it), one
number a line. Every line of both files must hold a sentence, and the two files as many lines.
A model that writes trees (string-to-tree) is given its targets as
bracketed trees (tokenized, as its recipe's ``trees/`` targets), and its log-probability sums
over the brackets and labels it writes too; translations are their leaves, or with
``--output-trees`` the trees written, bracketed.

    fairseq-tree-translate --recipe data/bible-en-fr-sample --parser link-grammar \
        --path checkpoints/tree2seq/checkpoint_best.pt --input test.en --score-targets test.fr
"""

import argparse
import sys
from collections.abc import Iterator

from fairseq_tree.cli.console import run_console
from fairseq_tree.cli.inference_options import add_inference_args, load_hub
from fairseq_tree.data.progress import Progress
from fairseq_tree.errors import CliError
from fairseq_tree.hub import TranslationInputError, from_pretrained
from fairseq_tree.line_files import batched, decode_line, numbered_lines, open_output
from fairseq_tree.parsing import ParserUnavailable


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fairseq-tree-translate",
                                     description=__doc__.split("\n")[0])
    add_inference_args(parser, "a data-prep recipe's output folder: its recipe.json gives the "
                       "data folder, languages, BPE codes, parser, lowercasing and Moses settings")
    parser.add_argument("--source-lang", "-s")
    parser.add_argument("--target-lang", "-t")
    parser.add_argument("--quote", action="store_true",
                        help="turn ’ into ' before tokenising (set by --recipe, as the recipes "
                        "do to their test sets)")
    parser.add_argument("--lowercase", action="store_true",
                        help="lowercase the leaves (after parsing), as the IWSLT recipes do")
    parser.add_argument("--no-detokenize", action="store_true", help="write tokenised output")
    parser.add_argument("--output-trees", action="store_true",
                        help="of a model that writes trees (--target-trees), write the tree "
                        "each translation is written as, bracketed, '(S (NP le chien) (VN a "
                        "aboyé))' (subwords joined, not detokenized), instead of its leaves")
    parser.add_argument("--score-targets", metavar="FILE",
                        help="score these translations of --input (one a line; bracketed trees "
                        "for a model that writes trees) instead of translating: one "
                        "log-probability a line, the natural log summed over every token the "
                        "model writes for the target (its subwords, for a model that writes "
                        "trees its brackets and labels too, and the end of sentence), not "
                        "averaged")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--lenpen", type=float, default=1.0)
    parser.add_argument("--max-len-a", type=float, default=0)
    parser.add_argument("--max-len-b", type=int, default=200)
    parser.add_argument("--fp16", action="store_true", help="translate in float16 (GPU)")
    return parser


def load(args):
    """The hub of ``--path`` (``hub.from_pretrained``); without ``--recipe`` the languages and
    BPE must be given."""
    if not args.recipe:
        missing = [flag for flag, value in (
            ("--source-lang", args.source_lang), ("--target-lang", args.target_lang),
            ("--bpe-codes or --sentencepiece-model", args.bpe_codes or args.sentencepiece_model))
            if not value]
        if missing:
            raise CliError(f"missing {', '.join(missing)}")
    hub = load_hub(args, from_pretrained, source_lang=args.source_lang,
                   target_lang=args.target_lang, detokenize=not args.no_detokenize,
                   batch_size=args.batch_size)
    if args.fp16:
        hub.half()
    return hub


def chunks(args) -> Iterator[list[tuple[str, str]]]:
    """Batches of ``(FILE:LINE, text)`` input lines."""
    lines = ((where, decode_line(raw, where).strip()) for where, raw in numbered_lines(args.input))
    return batched(lines, args.batch_size)


def translate(args):
    """Translate ``--input`` into ``--output`` line by line, keeping line alignment."""
    if args.score_targets:
        return score(args)
    hub = load(args)
    counts = {"lines": 0, "empty": 0, "too long": 0}
    with open_output(args.output) as sink, Progress("translating", unit="sentences",
                                                    interval=1000) as progress:
        for batch in chunks(args):
            outputs = hub.translate(
                [text for _, text in batch], beam=args.beam, trees=args.trees,
                names=[where for where, _ in batch], skip_invalid_size_inputs=True,
                output_trees=args.output_trees, lenpen=args.lenpen, max_len_a=args.max_len_a,
                max_len_b=args.max_len_b)
            for (_, text), line in zip(batch, outputs):
                counts["empty"] += not text
                counts["too long"] += line is None
                sink.write((line or "").encode("utf-8") + b"\n")
            counts["lines"] += len(batch)
            progress.update(len(batch))
    trees = hub.written_trees
    written = (f", {trees.malformed} of {trees.written} written trees malformed"
               if hub.task.output_tree is not None else "")
    print("fairseq-tree-translate: {lines} lines, {empty} empty, {too long} not translated "
          "(too long), {flat} parsed as flat fallback trees{written}".format(
              **counts, flat=hub.flat_fallbacks, written=written), file=sys.stderr)


def read_pairs(source_path: str, target_path: str) -> list[tuple[str, str, str]]:
    """``(SRC:LINE, source, target)`` of every line pair; a missing or empty line is a
    ``CliError`` naming it (before anything is scored)."""
    sources = [(where, decode_line(raw, where).strip()) for where, raw in
               numbered_lines(source_path)]
    targets = [(where, decode_line(raw, where).strip()) for where, raw in
               numbered_lines(target_path)]
    if len(sources) != len(targets):
        shorter, longer = sorted((sources, targets), key=len)
        where = longer[len(shorter)][0]
        raise CliError(f"{where}: no line {len(shorter) + 1} in "
                       f"{target_path if shorter is targets else source_path} "
                       f"({len(sources)} source lines, {len(targets)} target lines)")
    for (source_where, source), (target_where, target) in zip(sources, targets):
        if not source or not target:
            raise CliError(f"{source_where if not source else target_where}: empty line: "
                           "every source and target line must hold a sentence to score")
    return [(where, source, target) for (where, source), (_, target) in zip(sources, targets)]


def score(args):
    """Write the log-probability of each ``--score-targets`` line given its ``--input`` line."""
    pairs = read_pairs(args.input, args.score_targets)
    hub = load(args)
    with open_output(args.output) as sink, Progress("scoring", unit="pairs",
                                                    interval=1000) as progress:
        for batch in batched(pairs, args.batch_size):
            scores = hub.score([source for _, source, _ in batch],
                               [target for _, _, target in batch], trees=args.trees,
                               names=[where for where, _, _ in batch])
            sink.write("".join(f"{value:.6f}\n" for value in scores).encode("utf-8"))
            progress.update(len(batch))
    what = "subwords, brackets, labels" if hub.task.output_tree is not None else "subwords"
    print(f"fairseq-tree-translate: {len(pairs)} pairs scored (each a log-probability summed "
          f"over the target's written tokens: {what} and end of sentence), "
          f"{hub.flat_fallbacks} sources parsed as flat fallback trees", file=sys.stderr)


def cli_main(argv=None):
    """Console entry point: errors end the run with one line "fairseq-tree-translate: error: ..."."""
    run_console("fairseq-tree-translate", get_parser(), translate, argv,
                errors=(ParserUnavailable, TranslationInputError))


if __name__ == "__main__":
    cli_main()
