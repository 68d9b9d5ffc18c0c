"""fairseq-tree-score-parses against hand-computed spans and F1s, and its errors."""

import json
import random
import re

import pytest
from conftest import run_cli, write_lines

from fairseq_tree.cli import score_parses
from fairseq_tree.trees.evaluation import (
    SpanScore,
    is_punctuation,
    kept_words,
    nontrivial_spans,
    random_tree,
)
from fairseq_tree.trees.normal_form import parse_tree

GOLD = [
    # the dog saw a cat: NP [0,2), VP [2,5), NP [3,5); "." removed by its tag
    "(ROOT (S (NP (DT the) (NN dog)) (VP (VBD saw) (NP (DT a) (NN cat))) (. .)))",
    # I slept: two words, no span that is not trivial
    "(S (NP (PRP I)) (VP (VBD slept)) (, ,) (. .))",
    # link-grammar style, no PTB tags: "." removed by its characters; VP [1,5) PP [2,5) NP [3,5)
    "(S (NP John) (VP ran (PP to (NP the house))) .)",
]
PRED = [
    "(X (X the dog saw) (X a cat) .)",  # [0,3) [3,5): 1 of 2 right, 1 of 3 found
    "(X I (X slept , .))",  # [1,4) keeps one word: nothing left
    "(X (X John ran) (X to (X the house)) .)",  # [0,2) [2,5) [3,5): 2 of 3
]


def test_spans_after_punctuation_removal():
    gold = [parse_tree(tree) for tree in GOLD]
    keeps = [kept_words(tree) for tree in gold]
    assert [sum(keep) for keep in keeps] == [5, 2, 5]
    assert nontrivial_spans(gold[0], keeps[0]) == {(0, 2), (2, 5), (3, 5)}
    assert nontrivial_spans(gold[1], keeps[1]) == set()
    assert nontrivial_spans(gold[2], keeps[2]) == {(1, 5), (2, 5), (3, 5)}
    assert nontrivial_spans(parse_tree(PRED[1]), keeps[1]) == set()


def test_punctuation_follows_the_gold_tags():
    tree = parse_tree("(S (NP-SBJ (-NONE- *T*-1)) (NP ($ $) (CD 5) (NN %)) (VP (VBD fell) (. !)))")
    assert kept_words(tree) == [False, False, True, True, True, False]
    assert is_punctuation("--", None) and is_punctuation("«", None)
    assert not is_punctuation("&", "CC")
    assert not is_punctuation("$", None)  # a symbol, not punctuation, without a tag


def test_scores_and_baselines_against_hand_computed_values(tmp_path):
    gold, pred = write_lines(tmp_path / "gold", GOLD), write_lines(tmp_path / "pred", PRED)
    proc = run_cli("fairseq-tree-score-parses", "--gold", gold, "--pred", pred,
                   "--json", tmp_path / "s.json")
    scores = json.loads((tmp_path / "s.json").read_text())
    assert scores["sentences"] == 3 and scores["mean_words"] == 4
    # Sentence F1: 2PR/(P+R) per sentence: 0.4, 1 (no spans on either side), 2/3.
    model = scores["pred_scores"]
    assert model["sentence_f1"] == pytest.approx(100 * (0.4 + 1 + 2 / 3) / 3)
    # Corpus: 3 matched of 5 predicted and 6 gold spans.
    assert model["corpus_precision"] == pytest.approx(60)
    assert model["corpus_recall"] == pytest.approx(50)
    assert model["corpus_f1"] == pytest.approx(100 * 2 * 0.6 * 0.5 / 1.1)
    # Left-branching [0,2) [0,3) [0,4): 1/3, 1, 0; right-branching [1,5) [2,5) [3,5): 2/3, 1, 1.
    assert scores["left_branching"]["sentence_f1"] == pytest.approx(100 * (1 / 3 + 1 + 0) / 3)
    assert scores["left_branching"]["corpus_f1"] == pytest.approx(100 / 6)
    assert scores["right_branching"]["sentence_f1"] == pytest.approx(100 * (2 / 3 + 1 + 1) / 3)
    assert scores["right_branching"]["corpus_f1"] == pytest.approx(500 / 6)
    assert 0 <= scores["random"]["sentence_f1"]["median"] <= scores["random"]["sentence_f1"]["max"]
    assert "predicted" in proc.stdout and "right-branching" in proc.stdout


def test_sentence_with_gold_spans_only_or_predicted_spans_only():
    scores = SpanScore()
    scores.add({(0, 2)}, set())  # precision 0, recall 1
    scores.add(set(), {(0, 2)})  # precision 0 (nothing predicted), recall 0
    scores.add(set(), set())  # 1
    assert scores.sentence_f1 == [0.0, 0.0, 1.0]


def test_random_trees_are_binary_and_seeded():
    for words in (2, 3, 7, 20):
        spans = random_tree(words, random.Random(5))
        assert len(spans) == max(words - 2, 0)  # n - 1 internal nodes, less the root
        assert all(1 < end - start < words for start, end in spans)
    assert random_tree(20, random.Random(1)) == random_tree(20, random.Random(1))


@pytest.mark.parametrize("pred, message", [
    (PRED[:2], r"gold:3: \S+gold has more lines than the other file"),
    (PRED + ["(X a b)"], r"pred:4: \S+pred has more lines than the other file"),
    ([PRED[0], "(X I (X slept ,))", PRED[2]],
     r"pred:2: leaves differ from \S+gold:2 \(3 vs 4 words: word 4 is missing from one\)"),
    ([PRED[0], PRED[1], "(X (X Jon ran) to the house .)"],
     r"pred:3: leaves differ from \S+gold:3 \(6 vs 6 words: word 1 is 'Jon', gold 'John'\)"),
    ([PRED[0], "(X I slept", PRED[2]], r"pred:2: malformed tree: unbalanced brackets"),
    ([PRED[0], "", PRED[2]], r"pred:2: empty line, but the other file has a tree there"),
])
def test_bad_input_is_one_line_naming_file_and_line(tmp_path, pred, message, capsys):
    gold = write_lines(tmp_path / "gold", GOLD)
    with pytest.raises(SystemExit) as exit_:
        score_parses.cli_main(["--gold", str(gold), "--pred",
                               str(write_lines(tmp_path / "pred", pred))])
    assert str(exit_.value).startswith("fairseq-tree-score-parses: error: ")
    assert "\n" not in str(exit_.value) and re.search(message, str(exit_.value)), exit_.value
