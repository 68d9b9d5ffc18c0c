"""fairseq-tree-translate: translate raw sentences with a tree2seq (or leaves-only) checkpoint.

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
``--trees`` reads bracketed trees (already tokenised) instead of raw text.
"""

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator

from fairseq_tree.cli.console import (
    STDIO,
    CliError,
    batched,
    decode_line,
    numbered_lines,
    open_output,
    run_console,
)
from fairseq_tree.cli.parse import (
    add_backend_args,
    add_tokenize_args,
    backend_options,
    build_tokenizer,
)
from fairseq_tree.data.progress import Progress
from fairseq_tree.parsing import ParserUnavailable, build_parser

logger = logging.getLogger("fairseq_tree.cli.translate")


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fairseq-tree-translate",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("data", nargs="?",
                        help="the binarized data folder (its dictionaries are used)")
    parser.add_argument("--path", required=True, metavar="FILE", help="model checkpoint")
    parser.add_argument("--recipe", metavar="DIR",
                        help="a data-prep recipe's output folder: its recipe.json gives the data "
                        "folder, languages, BPE codes, lowercasing and Moses settings")
    parser.add_argument("--source-lang", "-s")
    parser.add_argument("--target-lang", "-t")
    bpe = parser.add_mutually_exclusive_group()
    bpe.add_argument("--bpe-codes", metavar="FILE", help="subword-nmt codes of the training data")
    bpe.add_argument("--sentencepiece-model", metavar="FILE", help="sentencepiece model")
    parser.add_argument("--trees", action="store_true",
                        help="the input lines are bracketed trees (tokenised): no parsing")
    add_backend_args(parser)
    add_tokenize_args(parser, default="moses")
    parser.add_argument("--normalize-punctuation", action="store_true",
                        help="Moses punctuation normalisation and removal of non-printing "
                        "characters before tokenising")
    parser.add_argument("--quote", action="store_true",
                        help="turn ’ into ' before tokenising (set by --recipe, as the recipes "
                        "do to their test sets)")
    parser.add_argument("--lowercase", action="store_true",
                        help="lowercase the leaves (after parsing), as the IWSLT recipes do")
    parser.add_argument("--no-detokenize", action="store_true", help="write tokenised output")
    parser.add_argument("--input", default=STDIO, metavar="FILE", help="default: standard input")
    parser.add_argument("--output", default=STDIO, metavar="FILE", help="default: standard output")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--lenpen", type=float, default=1.0)
    parser.add_argument("--max-len-a", type=float, default=0)
    parser.add_argument("--max-len-b", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=32, metavar="N",
                        help="sentences parsed and translated together")
    parser.add_argument("--cpu", action="store_true", help="do not use a GPU even if present")
    parser.add_argument("--fp16", action="store_true", help="translate in float16 (GPU)")
    return parser


def apply_recipe(args):
    """Fill the data folder, languages, BPE and text settings from ``--recipe``'s recipe.json;
    then check that everything needed is known."""
    if args.recipe:
        path = os.path.join(args.recipe, "recipe.json")
        try:
            with open(path, encoding="utf-8") as handle:
                recipe = json.load(handle)
        except (OSError, ValueError) as err:
            raise CliError(f"--recipe: cannot read {path}: {err}") from None
        args.data = args.data or os.path.join(args.recipe, "data-bin")
        args.source_lang = args.source_lang or recipe["src"]
        args.target_lang = args.target_lang or recipe["tgt"]
        if not args.sentencepiece_model:
            args.bpe_codes = args.bpe_codes or os.path.join(args.recipe, recipe["bpe_codes"])
        args.lowercase = args.lowercase or recipe.get("lowercase", False)
        args.aggressive_dash_splits = (args.aggressive_dash_splits
                                       or recipe.get("moses_aggressive_dash_splits", False))
        # Raw input is treated as the recipe treated its test sets: fairseq's recipes change ’
        # into ' there and do not normalise punctuation (WMT normalises training data only).
        args.quote = True
    missing = [flag for flag, value in (("DATA (or --recipe)", args.data),
                                        ("--source-lang", args.source_lang),
                                        ("--target-lang", args.target_lang),
                                        ("--bpe-codes or --sentencepiece-model",
                                         args.bpe_codes or args.sentencepiece_model)) if not value]
    if missing:
        raise CliError(f"missing {', '.join(missing)}")


def chunks(args) -> Iterator[list[tuple[str, str]]]:
    """Batches of ``(FILE:LINE, text)`` input lines."""
    lines = ((where, decode_line(raw, where).strip()) for where, raw in numbered_lines(args.input))
    return batched(lines, args.batch_size)


class SourceTrees:
    """Raw lines -> bracketed trees, as fairseq-tree-parse makes them; counts flat fallbacks."""

    def __init__(self, args):
        self.tokenize = build_tokenizer(args, args.source_lang, quote=args.quote,
                                        normalize=args.normalize_punctuation)
        self.backend = None if args.trees else build_parser(
            args.parser, args.source_lang, **backend_options(args), batch_size=args.batch_size)
        self.fallbacks = 0

    def __call__(self, lines: list[str]) -> list[str]:
        if self.backend is None:
            return lines
        results = self.backend.parse([self.tokenize(line) for line in lines])
        self.fallbacks += sum(result.fallback is not None for result in results)
        return [result.tree for result in results]


class Translator:
    """A fairseq checkpoint behind fairseq's ``GeneratorHubInterface``, fed bracketed trees."""

    def __init__(self, args):
        import torch
        from fairseq import checkpoint_utils
        from fairseq.hub_utils import GeneratorHubInterface

        import fairseq_tree  # noqa: F401  (registers the task and models)

        overrides = {"data": args.data, "source_lang": args.source_lang,
                     "target_lang": args.target_lang, "batch_size": args.batch_size}
        models, cfg, task = checkpoint_utils.load_model_ensemble_and_task(
            [args.path], arg_overrides=overrides)
        self.hub = GeneratorHubInterface(cfg, task, models).eval()
        if args.fp16:
            self.hub.half()
        if torch.cuda.is_available() and not args.cpu:
            self.hub.cuda()
        self.args = args
        self.segment = build_segmenter(args)
        self.bpe_symbol = "subword_nmt" if args.bpe_codes else "sentencepiece"
        self.detokenizer = None
        if not args.no_detokenize:
            from sacremoses import MosesDetokenizer

            self.detokenizer = MosesDetokenizer(lang=args.target_lang)

    def encode_leaf(self, word: str) -> str:
        """One leaf as BPE pieces joined by spaces (what the task's tree reader expects)."""
        return " ".join(self.segment(word.lower() if self.args.lowercase else word))

    def __call__(self, trees: list[str], wheres: list[str]) -> list[str | None]:
        """Translations of the trees; None where a tree is longer than the model accepts."""
        task = self.hub.task
        tokens, lengths = task.get_interactive_tokens_and_lengths(trees, self.encode_leaf)
        sizes = task.build_dataset_for_inference(tokens, lengths).src_sizes
        limit = self.hub.max_positions[0] if isinstance(self.hub.max_positions, tuple) else None
        keep = [i for i, size in enumerate(sizes) if limit is None or size <= limit]
        for i in sorted(set(range(len(trees))) - set(keep)):
            logger.warning(f"{wheres[i]}: {sizes[i]} source tokens (leaves + nodes) exceed the "
                           f"model's {limit}; written as an empty line")
        hypos = self.hub.generate([tokens[i] for i in keep], beam=self.args.beam,
                                  lenpen=self.args.lenpen, max_len_a=self.args.max_len_a,
                                  max_len_b=self.args.max_len_b)
        outputs = [None] * len(trees)
        for i, best in zip(keep, hypos):
            outputs[i] = self.decode(best[0]["tokens"])
        return outputs

    def decode(self, tokens) -> str:
        text = self.hub.tgt_dict.string(tokens, bpe_symbol=self.bpe_symbol)
        if self.detokenizer is None:
            return text
        return self.detokenizer.detokenize(text.split())


def build_segmenter(args) -> Callable[[str], list[str]]:
    """word -> BPE pieces, with the same subword-nmt / sentencepiece setup as fairseq-tree-bpe."""
    from fairseq_tree.cli.bpe import build_segmenter as build_words_segmenter

    segment_words = build_words_segmenter(argparse.Namespace(
        codes=args.bpe_codes, sentencepiece_model=args.sentencepiece_model, vocabulary=None,
        vocabulary_threshold=None))
    return lambda word: segment_words([word])


def translate(args):
    """Translate ``--input`` into ``--output`` line by line, keeping line alignment."""
    apply_recipe(args)
    source_trees = SourceTrees(args)
    translator = Translator(args)
    counts = {"lines": 0, "empty": 0, "too long": 0}
    with open_output(args.output) as sink, Progress("translating", unit="sentences",
                                                    interval=1000) as progress:
        for batch in chunks(args):
            real = [(where, text) for where, text in batch if text]
            trees = source_trees([text for _, text in real])
            translated = iter(translator(trees, [where for where, _ in real]))
            for _, text in batch:
                line = next(translated) if text else ""
                counts["empty"] += not text
                counts["too long"] += line is None
                sink.write((line or "").encode("utf-8") + b"\n")
            counts["lines"] += len(batch)
            progress.update(len(batch))
    print("fairseq-tree-translate: {lines} lines, {empty} empty, {too long} not translated "
          "(too long), {flat} parsed as flat fallback trees".format(
              **counts, flat=source_trees.fallbacks), file=sys.stderr)


def cli_main(argv=None):
    """Console entry point: errors end the run with one line "fairseq-tree-translate: error: ..."."""
    run_console("fairseq-tree-translate", get_parser(), translate, argv, errors=(ParserUnavailable,))


if __name__ == "__main__":
    cli_main()
