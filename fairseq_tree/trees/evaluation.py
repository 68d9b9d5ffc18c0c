"""Unlabeled span F1 of induced trees, with the protocol of the unsupervised-parsing papers that
Wang et al. (2019) follow (Htut et al., 2018; Shen et al., 2018b, whose On-LSTM code defines it):

* punctuation is removed from both trees before spans are read: the leaves whose gold POS tag
  is not a word tag of the Penn Treebank (``. , : `` '' -LRB- -RRB- # $``, and ``-NONE-`` empty
  elements); where the gold tree has no PTB tag for a leaf (link-grammar or induced trees), a
  leaf made only of Unicode punctuation characters;
* spans are unlabeled ``[start, end)`` sets; a node left without words disappears, and nodes
  over the same words count once; trivial spans (one word, the whole sentence) are excluded;
* sentence F1 is averaged over sentences; a sentence with no gold span has recall 1 and, with no
  predicted span either, precision 1 (so sentences of one or two words score 1);
* corpus F1 (summed counts) is given too.

The left-branching, right-branching and random-tree baselines are built on the same words.
``score_files`` scores a file of predicted trees against a file of gold ones, baselines
included (the library behind ``fairseq-tree-score-parses``).
"""

import itertools
import random
import statistics
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field

from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.line_files import LineError, decode_line, numbered_lines
from fairseq_tree.trees.bracketed import TreeSyntaxError
from fairseq_tree.trees.normal_form import NormalTree, parse_tree

PTB_WORD_TAGS = frozenset(
    "CC CD DT EX FW IN JJ JJR JJS LS MD NN NNS NNP NNPS PDT POS PRP PRP$ RB RBR RBS RP SYM TO UH "
    "VB VBD VBG VBN VBP VBZ WDT WP WP$ WRB".split())
PTB_NON_WORD_TAGS = frozenset([".", ",", ":", "``", "''", "-LRB-", "-RRB-", "#", "$", "-NONE-"])

Span = tuple[int, int]


def is_punctuation(word: str, tag: str | None) -> bool:
    """Removed before scoring: by its PTB tag when it has one, else by its characters."""
    if tag in PTB_NON_WORD_TAGS:
        return True
    if tag in PTB_WORD_TAGS:
        return False
    return all(unicodedata.category(char).startswith("P") for char in word)


def kept_words(gold: NormalTree) -> list[bool]:
    """Per leaf of the gold tree: is it a word (kept for scoring)?"""
    return [not is_punctuation(word, tag) for word, tag in zip(gold.leaves, gold.tags)]


def nontrivial_spans(tree: NormalTree, keep: list[bool]) -> set[Span]:
    """The tree's spans over the kept leaves only (renumbered), without one-word spans and the
    whole sentence."""
    index, before = 0, []  # before[i]: kept leaves before leaf i
    for kept in keep:
        before.append(index)
        index += kept
    before.append(index)
    spans = {(before[node.start], before[node.end]) for node in tree.nodes}
    return {(start, end) for start, end in spans if 1 < end - start < index}


def left_branching(words: int) -> set[Span]:
    """((((w1 w2) w3) w4) w5): spans [0, k) for 1 < k < words."""
    return {(0, end) for end in range(2, words)}


def right_branching(words: int) -> set[Span]:
    """(w1 (w2 (w3 (w4 w5)))): spans [k, words) for 0 < k < words - 1."""
    return {(start, words) for start in range(1, words - 1)}


def random_tree(words: int, rng: random.Random) -> set[Span]:
    """A random binary tree, split top-down at a uniformly random point of each span."""
    spans, stack = set(), [(0, words)]
    while stack:
        start, end = stack.pop()
        if end - start < 2:
            continue
        if 0 < end - start < words:
            spans.add((start, end))
        split = rng.randint(start + 1, end - 1)
        stack += [(start, split), (split, end)]
    return spans


@dataclass
class SpanScore:
    """Sentence-averaged and corpus precision, recall and F1 of predicted against gold spans."""

    sentence_f1: list[float] = field(default_factory=list)
    matched: int = 0
    predicted: int = 0
    gold: int = 0

    def add(self, predicted: set[Span], gold: set[Span]):
        overlap = len(predicted & gold)
        recall = overlap / len(gold) if gold else 1.0
        precision = overlap / len(predicted) if predicted else (1.0 if not gold else 0.0)
        total = precision + recall
        self.sentence_f1.append(2 * precision * recall / total if total else 0.0)
        self.matched, self.predicted, self.gold = (
            self.matched + overlap, self.predicted + len(predicted), self.gold + len(gold))

    def report(self) -> dict:
        """Percentages: mean sentence F1, and corpus precision, recall and F1."""
        precision = self.matched / self.predicted if self.predicted else 0.0
        recall = self.matched / self.gold if self.gold else 0.0
        total = precision + recall
        return {"sentence_f1": 100 * sum(self.sentence_f1) / max(len(self.sentence_f1), 1),
                "corpus_precision": 100 * precision, "corpus_recall": 100 * recall,
                "corpus_f1": 100 * (2 * precision * recall / total if total else 0.0),
                "sentences": len(self.sentence_f1)}


def read_tree(raw: bytes, where: str) -> NormalTree | None:
    """The tree of one line, None for an empty line; FILE:LINE errors for a malformed one."""
    line = decode_line(raw, where)
    if not line.strip():
        return None
    try:
        return parse_tree(line)
    except (TreeSyntaxError, ValueError) as err:
        raise LineError(f"{where}: malformed tree: {err}") from None


def tree_pairs(gold_path: str, pred_path: str) -> Iterator[tuple[NormalTree, NormalTree]]:
    """(gold, pred) trees line by line; line counts, emptiness and leaves must agree (else a
    ``LineError``). Lines empty in both files are skipped."""
    pairs = itertools.zip_longest(numbered_lines(gold_path), numbered_lines(pred_path))
    for gold_line, pred_line in pairs:
        if gold_line is None or pred_line is None:
            longer, where = (pred_path, pred_line[0]) if gold_line is None else (gold_path,
                                                                               gold_line[0])
            raise LineError(f"{where}: {longer} has more lines than the other file")
        (gold_where, gold_raw), (pred_where, pred_raw) = gold_line, pred_line
        gold, pred = read_tree(gold_raw, gold_where), read_tree(pred_raw, pred_where)
        if (gold is None) != (pred is None):
            empty = gold_where if gold is None else pred_where
            raise LineError(f"{empty}: empty line, but the other file has a tree there")
        if gold is None:
            continue
        if gold.leaves != pred.leaves:
            raise LineError(f"{pred_where}: leaves differ from {gold_where} "
                            f"({len(pred.leaves)} vs {len(gold.leaves)} words: "
                            f"{first_difference(pred.leaves, gold.leaves)})")
        yield gold, pred


def first_difference(pred: list[str], gold: list[str]) -> str:
    for i, (p, g) in enumerate(zip(pred, gold)):
        if p != g:
            return f"word {i + 1} is {p!r}, gold {g!r}"
    return f"word {min(len(pred), len(gold)) + 1} is missing from one"


def score_files(gold: str, pred: str, random_runs: int = 5, seed: int = 1) -> dict:
    """Span scores (``SpanScore.report``) of the trees of ``pred`` against those of ``gold``
    (one bracketed tree per line, the same sentences), and of the left- and right-branching
    baselines and of ``random_runs`` random trees (median and maximum; run k seeded
    ``seed + k``)."""
    if random_runs < 1:
        raise FairseqTreeError("random_runs must be at least 1")
    model, left, right = SpanScore(), SpanScore(), SpanScore()
    randoms = [SpanScore() for _ in range(random_runs)]
    rngs = [random.Random(seed + run) for run in range(random_runs)]
    words = []
    for gold_tree, pred_tree in tree_pairs(gold, pred):
        keep = kept_words(gold_tree)
        gold_spans, n = nontrivial_spans(gold_tree, keep), sum(keep)
        model.add(nontrivial_spans(pred_tree, keep), gold_spans)
        left.add(left_branching(n), gold_spans)
        right.add(right_branching(n), gold_spans)
        for rng, scores in zip(rngs, randoms):
            scores.add(random_tree(n, rng), gold_spans)
        words.append(n)
    if not words:
        raise FairseqTreeError(f"{gold}: no trees to score")
    random_reports = [scores.report() for scores in randoms]
    return {"gold": gold, "pred": pred, "sentences": len(words),
            "mean_words": sum(words) / len(words), "pred_scores": model.report(),
            "left_branching": left.report(), "right_branching": right.report(),
            "random": {key: {"median": statistics.median(r[key] for r in random_reports),
                             "max": max(r[key] for r in random_reports)}
                       for key in ("sentence_f1", "corpus_f1")},
            "random_runs": random_runs, "seed": seed}
