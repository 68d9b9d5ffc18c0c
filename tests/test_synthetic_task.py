"""The synthetic tree-transduction task (bench/tasks/synthetic_task.py): grammar, transduction,
ambiguity, splits, the written data set and a 2-update fairseq-train run on it."""

import json
import random
import re

import pytest
from conftest import TRAIN, run_cli

from fairseq_tree.trees import format_bracketed, parse_bracketed, parse_tree

from bench.tasks import synthetic_task as st

SIZES = {"train": 200, "valid": 20, "test": 20}


def target(*words):
    """Expected target tokens: source words translated, particles (ga, o, no) kept."""
    particles = set(st.PARTICLES.values())
    return [w if w in particles else st.TARGET_WORDS[w] for w in words]


def sample(count, seed=0):
    rng = random.Random(seed)
    return [st.sample_tree(rng) for _ in range(count)]


SAW_WITH_VP = ("(S (NP (DT the) (NN man)) (VP (VP (VBD saw) (NP (DT the) (NN dog))) "
               "(PP (IN with) (NP (DT a) (NN stick)))))")
SAW_WITH_NP = ("(S (NP (DT the) (NN man)) (VP (VBD saw) (NP (NP (DT the) (NN dog)) "
               "(PP (IN with) (NP (DT a) (NN stick))))))")


@pytest.mark.parametrize("tree, expected", [
    ("(S (NP (DT the) (NN dog)) (VP (VBD slept)))", "the dog ga slept"),
    ("(S (NP (DT a) (JJ big) (NN cat)) (VP (VBD saw) (NP (DT the) (NN dog))))",
     "a big cat ga the dog o saw"),
    (SAW_WITH_VP, "the man ga the dog o saw a stick with"),
    (SAW_WITH_NP, "the man ga a stick with no the dog o saw"),
    ("(S (NP (NP (DT the) (NN dog)) (SBAR (WDT that) (VP (VBD chased) (NP (DT a) (NN cat))))) "
     "(VP (VP (VBD slept)) (PP (IN under) (NP (DT the) (JJ old) (NN tree)))))",
     "a cat o chased the dog ga slept the old tree under"),
])
def test_transduction_of_hand_written_trees(tree, expected):
    assert st.transduce(parse_bracketed(tree)) == target(*expected.split())


def test_transduction_refuses_a_phrase_outside_the_grammar():
    with pytest.raises(ValueError, match="no transduction rule for S -> VP"):
        st.transduce(parse_bracketed("(S (VP (VBD slept)))"))


def test_pp_attachment_changes_the_target_but_not_the_source():
    vp, np_ = parse_bracketed(SAW_WITH_VP), parse_bracketed(SAW_WITH_NP)
    assert st.leaves(vp) == st.leaves(np_)
    assert st.transduce(vp) != st.transduce(np_)
    moves = list(st.reattachments(vp))
    assert [(m, old, new) for m, old, new, _ in moves] == [("PP", "VP", "NP")]
    assert format_bracketed(moves[0][3]) == SAW_WITH_NP
    assert st.ambiguity(vp) == {"any": True, "pp_np_vp": True, "target": True}
    assert st.ambiguity(parse_bracketed("(S (NP (DT the) (NN dog)) (VP (VBD slept)))")) == {
        "any": False, "pp_np_vp": False, "target": False}


def test_every_noun_verb_reattachment_of_generated_trees_changes_the_target():
    checked = 0
    for tree in sample(300):
        for modifier, old, new, moved in st.reattachments(tree):
            assert st.leaves(moved) == st.leaves(tree)
            if modifier == "PP" and old != new:
                assert st.transduce(moved) != st.transduce(tree)
                checked += 1
    assert checked > 100


def test_generated_trees_are_read_by_the_tree_reader():
    for tree in sample(500, seed=1):
        line = format_bracketed(tree)
        normal = parse_tree(line)
        normal.validate()
        assert normal.leaves == st.leaves(tree)
        assert len(normal.nodes) == st.count_phrases(tree)
        assert normal.nodes[0].label == "S"
        assert all(tag in st.LEXICON for tag in normal.tags)


def test_lexicon_is_a_bijection_onto_new_words():
    words = [w for ws in st.LEXICON.values() for w in ws]
    assert len(words) == len(set(words)) == len(st.TARGET_WORDS)  # one POS per word
    targets = set(st.TARGET_WORDS.values())
    assert len(targets) == len(words)
    assert not targets & (set(words) | set(st.PARTICLES.values()))
    assert all(re.fullmatch(r"[a-z]+", t) for t in targets)


def test_sample_statistics_match_the_grammar_description():
    stats = st.corpus_stats([st.make_example(t) for t in sample(2000, seed=2)])
    assert 9 < stats["source_tokens"]["mean"] < 15 and stats["source_tokens"]["min"] == 3
    assert stats["fraction_6_to_30_tokens"] > 0.75
    assert 0.35 < stats["fraction_ambiguous"]["pp_np_vp"] < 0.6
    assert stats["fraction_ambiguous"]["target"] >= stats["fraction_ambiguous"]["pp_np_vp"]


def sources(examples):
    return [e.source for e in examples]


def test_splits_are_deterministic_disjoint_and_fixed_across_training_sizes():
    small, _ = st.generate_splits(7, SIZES)
    again, _ = st.generate_splits(7, SIZES)
    large, _ = st.generate_splits(7, {**SIZES, "train": 600})
    other, _ = st.generate_splits(8, SIZES)
    assert small == again
    assert sources(other["test"]) != sources(small["test"])
    for split in ("valid", "test"):
        assert small[split] == large[split]
    assert large["train"][:200] == small["train"]
    held_out = set(sources(large["valid"])) | set(sources(large["test"]))
    train = sources(large["train"])
    assert len(set(train)) == len(train) and not held_out & set(train)
    assert len(held_out) == 40


def test_sentences_already_seen_are_dropped_and_counted():
    seen = set()
    first, dropped = st.sample_unique(random.Random(0), 5, seen)
    assert dropped == 0 and seen == set(sources(first))
    again, dropped = st.sample_unique(random.Random(0), 8, seen)  # the same stream again
    assert dropped == 5 and not set(sources(again)) & set(sources(first))
    assert again[:3] == st.sample_unique(random.Random(0), 8, set())[0][5:]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("synthetic")
    recipe = st.main(["--out", str(out), "--pair", "toy", "--seed", "3",
                      *(f"--{split}={n}" for split, n in SIZES.items())])
    return out / "toy", recipe


def test_writer_layout_and_recipe(written):
    pair_dir, recipe = written
    assert json.loads((pair_dir / "recipe.json").read_text()) == recipe
    assert recipe["sizes"] == SIZES and recipe["generator"]["seed"] == 3
    assert (recipe["src"], recipe["tgt"], recipe["lowercase"]) == ("src", "tgt", False)
    splits, _ = st.generate_splits(3, SIZES)
    for split, examples in splits.items():
        trees = (pair_dir / "trees" / f"{split}.src").read_text().splitlines()
        tokens = (pair_dir / "tok" / f"{split}.src").read_text().splitlines()
        assert [parse_tree(t).leaves for t in trees] == [s.split() for s in tokens]
        assert tokens == [" ".join(e.source) for e in examples]
        assert (pair_dir / "tok" / f"{split}.tgt").read_text().splitlines() == [
            " ".join(e.target) for e in examples]
    for side in ("src", "tgt"):
        assert (pair_dir / "ref" / f"test.{side}").read_text() == (
            pair_dir / "tok" / f"test.{side}").read_text()


def test_writer_binarizes_with_separate_dictionaries(written):
    data_bin = written[0] / "data-bin"
    src_dict = (data_bin / "dict.src.txt").read_text().split()[::2]
    tgt_dict = (data_bin / "dict.tgt.txt").read_text().split()[::2]
    assert "[NP]" in src_dict and "dog" in src_dict and "[NP]" not in tgt_dict
    assert st.TARGET_WORDS["dog"] in tgt_dict and "ga" in tgt_dict and "dog" not in tgt_dict
    for split in ("train", "valid", "test"):
        for suffix in ("src", "src.labels", "src.spans", "tgt"):
            for ext in ("bin", "idx"):
                assert (data_bin / f"{split}.src-tgt.{suffix}.{ext}").is_file()


@pytest.mark.slow
def test_tree2seq_trains_two_updates_on_the_written_data(written, tmp_path):
    flags = [flag for flag in TRAIN if flag != "--share-all-embeddings"]
    proc = run_cli("fairseq-train", written[0] / "data-bin", *flags, "--source-lang", "src",
                   "--target-lang", "tgt", "--max-update", "2", "--no-save",
                   "--save-dir", tmp_path)
    assert re.search(r"num_updates 2\b", proc.stdout + proc.stderr)
