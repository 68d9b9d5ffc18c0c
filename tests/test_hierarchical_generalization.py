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
from bench import hierarchical_generalization as scoring
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
        assert json.loads((control / "recipe.json").read_text())["parser"] == "right-branching"
        assert recipe["sizes"] == SIZES
        for split in SIZES:
            sources = (gold / "tok" / f"{split}.src").read_text().splitlines()
            targets = (gold / "tok" / f"{split}.tgt").read_text().splitlines()
            trees = [parse_bracketed(line) for line in
                     (gold / "trees" / f"{split}.src").read_text().splitlines()]
            assert [" ".join(hg.leaves(t)) for t in trees] == sources
            assert [" ".join(hg.target(t)) for t in trees] == targets
            assert (control / "tok" / f"{split}.src").read_text().splitlines() == sources
            controls = (control / "trees" / f"{split}.src").read_text().splitlines()
            assert controls == [right_branching_tree(source.split()) for source in sources]
            assert (control / "gold" / f"{split}.src").read_text() == (
                gold / "trees" / f"{split}.src").read_text()
        assert (gold / "data-bin" / "test1.src-tgt.src.bin").is_file()


@pytest.fixture(scope="module")
def checkpoint(written, tmp_path_factory):
    save = tmp_path_factory.mktemp("checkpoints")
    run_cli("fairseq-train", written / "tense" / "data-bin", *TRAIN, "--source-lang", "src",
            "--target-lang", "tgt", "--max-update", "2", "--save-dir", save)
    return save / "checkpoint_last.pt"


def test_tree2seq_trains_and_generates_the_generalization_split(written, checkpoint):
    flags = [flag if flag != "test" else "test1" for flag in GENERATE]
    proc = run_cli("fairseq-generate", written / "tense" / "data-bin", *flags, "--path", checkpoint,
                   "--source-lang", "src", "--target-lang", "tgt", "--max-len-b", "30")
    assert len(re.findall(r"^H-\d+", proc.stdout, flags=re.M)) == SIZES["gen"]


@pytest.mark.parametrize("task", hg.TASKS)
def test_scores_tell_the_hierarchical_rule_from_the_linear_one(task):
    splits = prep.generate_splits(task, 5, SIZES)
    gen = splits["gen"]
    right = scoring.summarize(gen, [hg.target(t) for t in gen])
    linear = scoring.summarize(gen, [hg.target(t, linear=True) for t in gen])
    assert right["all"] == {"examples": 40, "full_sentence": 100, "scored_word": 100,
                            "linear_word": 0, "linear_sentence": 0}
    assert linear["all"] == {"examples": 40, "full_sentence": 0, "scored_word": 0,
                             "linear_word": 100, "linear_sentence": 100}
    by_modifier = right["by_subject_modifier"]
    assert sum(cells["examples"] for cells in by_modifier.values()) == 40
    assert "none" not in by_modifier
    # an output cut short has no scored word: neither rule's
    short = scoring.summarize(gen, [hg.target(t)[:1] if task == "tense" else [] for t in gen])
    assert short["all"]["scored_word"] == short["all"]["linear_word"] == 0
    # on the in-distribution test set the rules agree: no output counts as the linear rule's
    test = scoring.summarize(splits["test"], [hg.target(t, linear=True) for t in splits["test"]])
    assert test["all"]["full_sentence"] == 100 and test["all"]["linear_word"] == 0


def test_one_command_scores_a_checkpoint_on_the_recipe_and_on_held_out_trees(
        written, checkpoint, tmp_path):
    report = scoring.main(["--recipe", str(written / "tense"), "--checkpoint", str(checkpoint),
                           "--json", str(tmp_path / "scores.json")])
    assert json.loads((tmp_path / "scores.json").read_text())["splits"] == report["splits"]
    assert {split: s["all"]["examples"] for split, s in report["splits"].items()} == {
        "test": SIZES["test"], "gen": SIZES["gen"]}
    # the right-branching folder: the hub parses the tokens as the recipe did; same checkpoint
    # vocabulary (one grammar), so the scores are computed on the same gold trees
    held_out = tmp_path / "held-out.trees"
    rng = random.Random(99)
    held_out.write_text("".join(format_bracketed(hg.sample_example(rng, "tense", True)) + "\n"
                                for _ in range(7)))
    other = scoring.main(["--recipe", str(written / "tense"), "--checkpoint", str(checkpoint),
                          "--gold-trees", str(held_out)])
    assert other["splits"]["held-out"]["all"]["examples"] == 7
    lines = scoring.markdown_lines(report)
    assert lines[0].startswith("| model | split | subject | examples | sentence % | main verb %")
    assert len(lines) == 2 + 2 + len(report["splits"]["test"]["by_subject_modifier"]) + len(
        report["splits"]["gen"]["by_subject_modifier"])


def test_a_line_outside_the_grammar_is_an_error_naming_it(written, checkpoint, tmp_path):
    bad = tmp_path / "bad.trees"
    bad.write_text("(S (NP (DT the) (NN dog)) (VP (VBD barked)) (. .))\n")
    with pytest.raises(SystemExit, match=r"bad.trees:1: "):
        scoring.main(["--recipe", str(written / "tense"), "--checkpoint", str(checkpoint),
                      "--gold-trees", str(bad)])
