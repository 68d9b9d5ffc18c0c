"""McCoy et al.'s (2020) tense reinflection and question formation (fairseq_tree.trees.
hierarchical_generalization, data-prep/prepare_hierarchical_generalization.py): the grammars'
yield, the gold trees, both rules' targets, the ambiguity constraint, the right-branching
control and the recipe's data-bin, down to fairseq-train and fairseq-generate on the
generalization split."""

import json
import os
import random
import re
import subprocess

import pytest
from conftest import GENERATE, ROOT, TRAIN, run_cli

import prepare_hierarchical_generalization as prep
from fairseq_tree.parsing import build_parser, right_branching_tree
from fairseq_tree.trees import format_bracketed, parse_bracketed, parse_tree
from fairseq_tree.trees import hierarchical_generalization as hg

# The productions the grammars allow: label -> the children's labels.
PRODUCTIONS = {
    ("ROOT", ("S", "MARK")),
    ("S", ("NP", "VP", ".")), ("S", ("VP",)), ("S", ("NP", "VP")),
    ("NP", ("DT", "NN")), ("NP", ("DT", "NNS")), ("NP", ("NP", "PP")), ("NP", ("NP", "SBAR")),
    ("PP", ("IN", "NP")), ("SBAR", ("WHNP", "S")), ("WHNP", ("WP",)), ("WHNP", ("WDT",)),
    ("VP", ("VBD",)), ("VP", ("VBD", "NP")), ("VP", ("VB",)), ("VP", ("VB", "NP")),
    ("VP", ("MD", "VP")), ("VP", ("VBZ", "VP")), ("VP", ("VBP", "VP")),
}
WORDS = {
    "DT": set(hg.DETERMINERS), "NN": set(hg.NOUNS), "NNS": set(hg.NOUNS.values()),
    "IN": set(hg.PREPOSITIONS), "WP": {"who"}, "WDT": {"that"}, ".": {"."},
    "VBD": {past for verbs in (hg.INTRANSITIVE, hg.TRANSITIVE) for past, _ in verbs.values()},
    "VB": set(hg.INTRANSITIVE) | set(hg.TRANSITIVE),
    "MD": {"can", "could", "will", "would"}, "VBZ": {"does"}, "VBP": {"do"},
    "MARK": {m for markers in hg.MARKERS.values() for m in markers},
}
SIZES = {"train": 300, "valid": 40, "test": 40, "gen": 40}


def productions(tree, out):
    labels = tuple(c.label for c in tree.children if not isinstance(c, str))
    if labels:
        out.add((tree.label, labels))
    for child in tree.children:
        if isinstance(child, str):
            assert child in WORDS[tree.label], (tree.label, child)
        else:
            productions(child, out)
    return out


@pytest.mark.parametrize("task", hg.TASKS)
def test_the_grammar_yields_its_rules_every_one_and_only_those(task):
    rng = random.Random(0)
    seen = set()
    for generalization in (False, True):
        for _ in range(600):
            productions(hg.sample_example(rng, task, generalization), seen)
    past_or_bare = {"VBD"} if task == "tense" else {"VB", "MD", "VBZ", "VBP"}
    allowed = {(label, children) for label, children in PRODUCTIONS
               if not (set(children) & ({"VBD", "VB", "MD", "VBZ", "VBP"} - past_or_bare))}
    assert seen <= PRODUCTIONS
    assert seen == allowed


@pytest.mark.parametrize("tree, present, linear", [
    ("(ROOT (S (NP (NP (DT my) (NN zebra)) (PP (IN by) (NP (DT the) (NNS yaks)))) "
     "(VP (VBD swam)) (. .)) (MARK PRESENT))",
     "my zebra by the yaks swims .", "my zebra by the yaks swim ."),
    ("(ROOT (S (NP (NP (DT the) (NNS newts)) (SBAR (WHNP (WP who)) (S (NP (DT our) (NN yak)) "
     "(VP (VBD amused))))) (VP (VBD ate)) (. .)) (MARK PRESENT))",
     "the newts who our yak amuses eat .", "the newts who our yak amuses eats ."),
    ("(ROOT (S (NP (DT her) (NN raven)) (VP (VBD admired) (NP (NP (DT some) (NNS quails)) "
     "(SBAR (WHNP (WDT that)) (S (VP (VBD read)))))) (. .)) (MARK PRESENT))",
     "her raven admires some quails that read .", "her raven admires some quails that read ."),
    ("(ROOT (S (NP (DT the) (NNS yaks)) (VP (VBD slept)) (. .)) (MARK PAST))",
     "the yaks slept .", "the yaks slept ."),
])
def test_tense_targets_of_hand_written_trees(tree, present, linear):
    tree = parse_bracketed(tree)
    assert " ".join(hg.target(tree)) == present
    assert " ".join(hg.target(tree, linear=True)) == linear
    assert hg.is_ambiguous(tree) == (present == linear)


def test_question_targets_move_the_main_auxiliary_or_the_first():
    tree = parse_bracketed(
        "(ROOT (S (NP (NP (DT my) (NN zebra)) (SBAR (WHNP (WP who)) (S (VP (MD can) "
        "(VP (VB swim)))))) (VP (MD will) (VP (VB giggle))) (. .)) (MARK QUEST))")
    assert " ".join(hg.target(tree)) == "will my zebra who can swim giggle ?"
    assert " ".join(hg.target(tree, linear=True)) == "can my zebra who swim will giggle ?"
    analysis = hg.analyze(tree)
    assert (analysis.subject_modifier, analysis.main_index, analysis.first_auxiliary_index) == (
        "RC intransitive", 5, 3)
    assert hg.is_decisive(tree) and not hg.is_ambiguous(tree)
    declarative = parse_bracketed(format_bracketed(tree).replace("QUEST", "DECL"))
    assert " ".join(hg.target(declarative)) == "my zebra who can swim will giggle ."


def test_a_tree_of_another_grammar_is_refused():
    with pytest.raises(hg.NotOfTheGrammar):
        hg.analyze(parse_bracketed("(S (NP (DT the) (NN dog)) (VP (VBD barked)) (. .))"))


def test_right_branching_trees_have_the_tokens_as_leaves():
    assert right_branching_tree(["a", "b", "c"]) == "(X a (X b c))"
    assert right_branching_tree(["x"]) == "(ROOT x)"
    [result] = build_parser("right-branching", "de").parse([["(", "b", ")", "d"]])
    assert result.fallback is None
    assert parse_tree(result.tree).leaves == ["(", "b", ")", "d"]


@pytest.mark.parametrize("task", hg.TASKS)
def test_splits_hold_the_ambiguity_constraint(task):
    splits = prep.generate_splits(task, 3, SIZES)
    assert {split: len(trees) for split, trees in splits.items()} == SIZES
    sources = {split: [tuple(hg.leaves(t)) for t in trees] for split, trees in splits.items()}
    everything = [s for split in sources.values() for s in split]
    assert len(set(everything)) == len(everything)
    for split in ("train", "valid", "test"):
        assert all(hg.is_ambiguous(t) for t in splits[split])  # no example tells the rules apart
        markers = {hg.analyze(t).marker for t in splits[split]}
        assert markers == set(hg.MARKERS[task]), split
    for tree in splits["gen"]:  # every one does, in the scored word
        analysis = hg.analyze(tree)
        assert analysis.marker == hg.MARKERS[task][1] and hg.is_decisive(tree)
        assert analysis.subject_modifier != "none"
    larger = prep.generate_splits(task, 3, {**SIZES, "train": 400})
    assert larger["train"][:300] == splits["train"] and larger["gen"] == splits["gen"]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("hierarchical")
    sizes = " ".join(f"--{split} {n}" for split, n in SIZES.items())
    proc = subprocess.run(["bash", str(ROOT / "data-prep" / "prepare-hierarchical-generalization.sh")],
                          env={**os.environ, "DATA": str(out), "SIZES": sizes,
                               "WORKERS": "1"},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return out


def test_the_recipe_writes_both_tasks_with_gold_and_right_branching_trees(written):
    assert sorted(p.name for p in written.iterdir()) == [
        "question", "question-right-branching", "tense", "tense-right-branching"]
    for task in hg.TASKS:
        gold, control = written / task, written / f"{task}-right-branching"
        recipe = json.loads((gold / "recipe.json").read_text())
        assert (recipe["task"], recipe["trees"], recipe["splits"]["gen"]) == (task, "gold", "test1")
        assert recipe["sizes"] == SIZES
        for split in SIZES:
            sources = (gold / "tok" / f"{split}.src").read_text().splitlines()
            targets = (gold / "tok" / f"{split}.tgt").read_text().splitlines()
            trees = [parse_bracketed(line) for line in
                     (gold / "trees" / f"{split}.src").read_text().splitlines()]
            assert [" ".join(hg.leaves(t)) for t in trees] == sources
            assert [" ".join(hg.target(t)) for t in trees] == targets
            assert (control / "tok" / f"{split}.src").read_text().splitlines() == sources
            for line, source in zip((control / "trees" / f"{split}.src").read_text().splitlines(),
                                    sources):
                assert parse_tree(line).leaves == source.split()
                assert re.fullmatch(r"\(ROOT \(X .*\) \(MARK [A-Z]+\)\)", line)
        assert (gold / "data-bin" / "test1.src-tgt.src.bin").is_file()


def test_tree2seq_trains_and_generates_the_generalization_split(written, tmp_path):
    data_bin = written / "tense" / "data-bin"
    run_cli("fairseq-train", data_bin, *TRAIN, "--source-lang", "src", "--target-lang", "tgt",
            "--max-update", "2", "--save-dir", tmp_path)
    flags = [flag if flag != "test" else "test1" for flag in GENERATE]
    proc = run_cli("fairseq-generate", data_bin, *flags, "--path", tmp_path / "checkpoint_last.pt",
                   "--source-lang", "src", "--target-lang", "tgt", "--max-len-b", "30")
    assert len(re.findall(r"^H-\d+", proc.stdout, flags=re.M)) == SIZES["gen"]
