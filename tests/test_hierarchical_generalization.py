"""McCoy et al.'s (2020) tense reinflection and question formation (bench.
hierarchical_grammar, data-prep/prepare_hierarchical_generalization.py): the grammars'
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
from bench import hierarchical_generalization as hierarchical
from bench import hierarchical_generalization_curves as curves
from bench import hierarchical_generalization_seeds as seeds
from bench.lib import hierarchical_scoring as scoring
from fairseq_tree.data.recipe import Recipe
from fairseq_tree.parsing import build_parser, right_branching_tree
from fairseq_tree.trees import format_bracketed, parse_bracketed, parse_tree
from bench.tasks import hierarchical_grammar as hg

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
    assert hg.key_words(tree) == {
        "words": {"subject noun": 1, "main auxiliary": 5, "first auxiliary": 3},
        "phrases": {"subject": (0, 5), "subject noun": (0, 2)}, "main_index": 5,
        "scored_index": 0, "length": 9}


def test_key_words_and_their_columns_in_a_left_padded_batch_row():
    tree = parse_bracketed(
        "(ROOT (S (NP (NP (DT my) (NN zebra)) (PP (IN by) (NP (DT the) (NNS yaks)))) "
        "(VP (VBD swam)) (. .)) (MARK PRESENT))")
    assert hg.key_words(tree) == {
        "words": {"subject noun": 1, "nearest noun": 4, "main verb": 5},
        "phrases": {"subject": (0, 5), "subject noun": (0, 2), "nearest noun": (3, 5)},
        "main_index": 5, "scored_index": 5, "length": 8}
    # 8 leaves and EOS left-padded by 2 in a row of 11 columns; nodes (columns 11-18): ROOT, S,
    # the subject NP, its first NP, a padded node, the PP, its NP, the main VP
    spans = [[2, 10], [2, 9], [2, 7], [2, 4], [0, 0], [4, 7], [5, 7], [7, 8]]
    columns = hierarchical.key_columns(hg.key_words(tree), 2, spans, [0, 1, 2, 3, 5, 6, 7], 11)
    assert columns == {"subject noun": [3], "nearest noun": [6], "main verb": [7],
                       "subject phrase": [13], "subject noun phrase": [14],
                       "nearest noun phrase": [17], "main word's VP": [18],
                       "clause and root": [11, 12],
                       "other words": [2, 4, 5, 8, 9], "other nodes": [16], "EOS": [10]}


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


@pytest.mark.slow
def test_the_recipe_writes_both_tasks_with_gold_and_right_branching_trees(written):
    assert sorted(p.name for p in written.iterdir()) == [
        "question", "question-right-branching", "tense", "tense-lm", "tense-output-trees",
        "tense-right-branching"]
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


@pytest.mark.parametrize("seed", [1, 2])
def test_a_tense_target_tree_is_the_source_sentence_over_the_target_words(seed):
    rng = random.Random(seed)
    for generalization in (True, False, False, False):
        source = hg.sample_example(rng, "tense", generalization)
        target = hg.tense_target_tree(source)
        assert hg.leaves(target) == hg.target(source)
        sentence = source.children[0]
        assert [n.label for n, _ in hg._positions(target) if n.label not in ("VBZ", "VBP")] == [
            n.label for n, _ in hg._positions(sentence)
            if n.label != "VBD" or source.children[1].children[0] == "PAST"]


@pytest.mark.slow
def test_the_output_trees_folder_binarizes_the_targets_gold_trees(written):
    folder = written / "tense-output-trees"
    recipe = json.loads((folder / "recipe.json").read_text())
    assert (recipe["trees"], recipe["target_trees"], recipe["sizes"]) == ("gold", "gold", SIZES)
    for split in SIZES:
        trees = [parse_tree(line) for line in
                 (folder / "trees" / f"{split}.tgt").read_text().splitlines()]
        assert [" ".join(t.leaves) for t in trees] == (
            written / "tense" / "tok" / f"{split}.tgt").read_text().splitlines()
    assert (folder / "data-bin" / "test1.src-tgt.tgt.spans.bin").is_file()


@pytest.mark.slow
def test_the_language_models_folder_holds_each_example_as_one_sequence(written):
    """tense-lm: source, marker and target one line, the gold trees beside them (what the
    scores read), the generalization set binarized as test1, as in the translation folder."""
    gold, lm = written / "tense", written / "tense-lm"
    recipe = json.loads((lm / "recipe.json").read_text())
    assert (recipe["kind"], recipe["task"], recipe["gold_trees"], recipe["sizes"]) == (
        "language_model", "tense", "trees", SIZES)
    for split in SIZES:
        sources = (gold / "tok" / f"{split}.src").read_text().splitlines()
        targets = (gold / "tok" / f"{split}.tgt").read_text().splitlines()
        assert (lm / "lm" / f"{split}.txt").read_text().splitlines() == [
            f"{source} {target}" for source, target in zip(sources, targets)]
        assert (lm / "trees" / f"{split}.src").read_text() == (
            gold / "trees" / f"{split}.src").read_text()
    assert (lm / "data-bin" / "test1.bin").is_file() and (lm / "data-bin" / "dict.txt").is_file()


def test_a_language_models_continuation_starts_after_the_prefix_and_its_eos_is_dropped():
    """fairseq's language-model hub returns the forced prefix with the continuation."""
    import torch

    class Hub:
        vocabulary = ["<eos>", "the", "newt", "laughs", "laughed", ".", "PRESENT"]

        def encode(self, text):
            return torch.tensor([self.vocabulary.index(w) for w in text.split()] + [0])

        def generate(self, encoded, beam, max_len_a, max_len_b):
            assert (beam, max_len_a, max_len_b) == (1, 2, 1)
            made = {"the newt laughed . PRESENT": "the newt laughs ."}
            return [[{"tokens": torch.cat([ids[:-1], self.encode(made[self.string(ids)])])}]
                    for ids in encoded]

        def string(self, ids):
            return " ".join(self.vocabulary[i] for i in ids.tolist() if i != 0)

    assert scoring.continue_sequences(Hub(), ["the newt laughed . PRESENT"]) == [
        ["the", "newt", "laughs", "."]]


def test_a_spacy_folder_records_the_pipeline_the_hub_parses_held_out_trees_with(
        tmp_path, english_spacy_model):
    name = english_spacy_model
    sizes = {"train": 30, "valid": 4, "test": 4, "gen": 4}
    prep.write_task(tmp_path, "tense", ["spacy"], sizes, 3, spacy_model=name,
                    progress=lambda line: None)
    folder = tmp_path / "tense-spacy"
    recipe = Recipe.read(folder, kind="translation")
    assert recipe.spacy["model"] == name
    assert recipe.text_steps().parser_options == {"spacy_model": name}
    # the sides are named src and tgt; the parser is told the language, English
    assert (recipe.src, recipe.language(recipe.src), recipe.language(recipe.tgt)) == (
        "src", "en", "en")
    save = tmp_path / "checkpoints"
    run_cli("fairseq-train", folder / "data-bin", *TRAIN, "--source-lang", "src",
            "--target-lang", "tgt", "--max-update", "2", "--save-dir", save)
    held_out = tmp_path / "held-out.trees"
    rng = random.Random(7)
    held_out.write_text("".join(format_bracketed(hg.sample_example(rng, "tense", True)) + "\n"
                                for _ in range(3)))
    report = hierarchical.main(["--recipe", str(folder), "--checkpoint",
                                str(save / "checkpoint_last.pt"), "--gold-trees", str(held_out)])
    assert report["splits"]["held-out"]["all"]["examples"] == 3


@pytest.fixture(scope="module")
def checkpoint(written, tmp_path_factory):
    save = tmp_path_factory.mktemp("checkpoints")
    run_cli("fairseq-train", written / "tense" / "data-bin", *TRAIN, "--source-lang", "src",
            "--target-lang", "tgt", "--max-update", "2", "--save-dir", save)
    return save / "checkpoint_last.pt"


@pytest.mark.slow
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


@pytest.mark.slow
def test_one_command_scores_a_checkpoint_on_the_recipe_and_on_held_out_trees(
        written, checkpoint, tmp_path):
    report = hierarchical.main(["--recipe", str(written / "tense"), "--checkpoint",
                                str(checkpoint), "--json", str(tmp_path / "scores.json")])
    assert json.loads((tmp_path / "scores.json").read_text())["splits"] == report["splits"]
    assert {split: s["all"]["examples"] for split, s in report["splits"].items()} == {
        "test": SIZES["test"], "gen": SIZES["gen"]}
    # a folder of parsed trees: its splits are read as the recipe parsed them (trees/), other
    # trees' tokens go to the hub's parser
    control = written / "tense-right-branching"
    recipe = scoring.read_recipe(control)
    gold = scoring.read_gold_trees(control / "gold" / "gen.src")
    parsed = scoring.recipe_parses(control, ["gen"])["gen"]
    assert scoring.model_inputs(gold, recipe, parsed) == (
        (control / "trees" / "gen.src").read_text().splitlines(), True)
    assert scoring.model_inputs(gold, recipe) == (
        [" ".join(hg.leaves(tree)) for tree in gold], False)
    with pytest.raises(scoring.FairseqTreeError, match="gen.src: 40 trees for 39 gold trees"):
        scoring.model_inputs(gold[1:], recipe, parsed)
    held_out = tmp_path / "held-out.trees"
    rng = random.Random(99)
    held_out.write_text("".join(format_bracketed(hg.sample_example(rng, "tense", True)) + "\n"
                                for _ in range(7)))
    other = hierarchical.main(["--recipe", str(written / "tense"), "--checkpoint",
                               str(checkpoint), "--gold-trees", str(held_out)])
    assert other["splits"]["held-out"]["all"]["examples"] == 7
    lines = hierarchical.markdown_lines(report)
    assert lines[0].startswith("| model | split | subject | examples | sentence % | main verb %")
    assert len(lines) == 2 + 2 + len(report["splits"]["test"]["by_subject_modifier"]) + len(
        report["splits"]["gen"]["by_subject_modifier"])


@pytest.mark.slow
def test_attention_at_the_scored_word_is_shared_out_over_the_roles(written, checkpoint):
    report = hierarchical.main(["--recipe", str(written / "tense"), "--checkpoint",
                                str(checkpoint), "--split", "gen", "--attention", "10"])
    for kind in ("cross_attention", "self_attention"):
        attention = report["attention"]["gen"][kind]
        groups = [attention["all"], *attention["by_prediction"].values(),
                  *attention["per_layer"].values()]
        for cells in groups:
            assert sum(v for k, v in cells.items() if k != "examples") == pytest.approx(
                100, abs=0.1)
        assert attention["all"]["examples"] == 10 == sum(
            cells["examples"] for cells in attention["by_prediction"].values())
    assert report["attention"]["gen"]["cross_attention"]["all"]["subject phrase"] > 0
    assert "| subject noun % | nearest noun % | main verb % | subject phrase % |" in \
        hierarchical.attention_lines(report)[0]
    assert "| subject noun % | nearest noun % | rest of the prefix % |" in \
        hierarchical.attention_lines(report, "self_attention")[0]
    with pytest.raises(SystemExit):
        hierarchical.main(["--recipe", str(written / "tense"), "--checkpoint", str(checkpoint),
                           "--gold-trees", str(written / "tense" / "trees" / "gen.src"),
                           "--attention", "3"])


@pytest.mark.slow
def test_a_line_outside_the_grammar_is_an_error_naming_it(written, checkpoint, tmp_path):
    bad = tmp_path / "bad.trees"
    bad.write_text("(S (NP (DT the) (NN dog)) (VP (VBD barked)) (. .))\n")
    with pytest.raises(SystemExit, match=r"bad.trees:1: "):
        hierarchical.main(["--recipe", str(written / "tense"), "--checkpoint", str(checkpoint),
                           "--gold-trees", str(bad)])


def fake_run(system: str, seed: int, gen_word: float, gen_sentence: float) -> dict:
    cells = {"examples": 10, "full_sentence": gen_sentence, "scored_word": gen_word,
             "linear_word": 100 - gen_word, "linear_sentence": 0.0}
    test = {**cells, "full_sentence": 99.0}
    return {"system": system, "seed": seed, "task": "tense", "best_updates": 1000,
            "splits": {"test": {"all": test, "by_subject_modifier": {}},
                       "gen": {"all": cells, "by_subject_modifier": {"PP": cells}}}}


def test_seed_summary_tests_every_system_against_the_first_with_holm():
    runs = [fake_run("a:transformer", s, w, w / 2) for s, w in ((1, 1.0), (2, 3.0), (3, 2.0))]
    runs += [fake_run("a:tree2seq", s, w, w / 2) for s, w in ((1, 21.0), (2, 27.0), (3, 30.0))]
    runs += [fake_run("b:tree2seq", s, 2.0 + s, 1.0) for s in (1, 2)]
    systems = ["a:transformer", "a:tree2seq", "b:tree2seq"]
    rows = seeds.summary(runs, systems)
    assert [r["seeds"] for r in rows] == [[1, 2, 3], [1, 2, 3], [1, 2]]
    assert rows[1]["gen scored_word"]["mean"] == 26.0
    assert rows[1]["gen scored_word"]["sd"] == pytest.approx(4.5826, abs=1e-4)
    assert rows[2]["gen by subject modifier"]["PP"]["scored_word"]["values"] == [3.0, 4.0]
    tests = seeds.t_tests(runs, systems)
    assert [(t["system"], t["measure"], t["seed_list"]) for t in tests] == [
        ("a:tree2seq", "gen scored_word", [1, 2, 3]),
        ("a:tree2seq", "gen full_sentence", [1, 2, 3]),
        ("b:tree2seq", "gen scored_word", [1, 2]),
        ("b:tree2seq", "gen full_sentence", [1, 2])]
    assert tests[0]["differences"] == [20.0, 24.0, 28.0]
    # b's full sentences differ from a's by -0.5 and -1.5: a spread, so a test; Holm over 4
    tested = [t for t in tests if t["p_value"] is not None]
    assert len(tested) == 4
    smallest = min(tested, key=lambda t: t["p_value"])
    assert smallest["holm_p_value"] == pytest.approx(min(1.0, 4 * smallest["p_value"]))
    assert all(t["holm_p_value"] >= t["p_value"] for t in tested)
    report = {"task": "tense", "summary": rows, "tests": tests}
    table = seeds.summary_table(report)
    assert table[0].startswith("| system (config:model) | seeds | test: sentence % |")
    assert "main verb minus a:transformer (p)" in table[0] and "Holm p (4 tests)" in table[0]
    assert table[3].startswith("| a:tree2seq | 1, 2, 3 | 99.00 ± 0.00 | 13.00 ± 2.29 | "
                               "26.00 ± 4.58 | 74.00 ± 4.58 | +24.00 (")
    by_modifier = seeds.modifier_table(report)
    assert by_modifier[0] == ("| system | subject modifier | main verb % | main verb by the linear "
                              "rule % | sentence % |")
    assert by_modifier[2:] == ["| a:transformer | PP | 2.00 ± 1.00 | 98.00 ± 1.00 | 1.00 ± 0.50 |",
                               "| a:tree2seq | PP | 26.00 ± 4.58 | 74.00 ± 4.58 | 13.00 ± 2.29 |",
                               "| b:tree2seq | PP | 3.50 ± 0.71 | 96.50 ± 0.71 | 1.00 ± 0.00 |"]
    assert any("97.3" in line for line in seeds.paper_table(report))


def test_seed_rates_count_generalizing_seeds_and_test_the_shares_of_the_fully_seeded_systems():
    """Outcomes split near 0% and near 100%: a seed generalizes above 50%; the share has a
    Wilson interval; Fisher's exact test compares the systems with RATE_TEST_SEEDS seeds."""
    n = seeds.RATE_TEST_SEEDS
    linear = [fake_run("a:transformer", s, 0.5, 0.0) for s in range(1, n + 1)]
    split = [fake_run("a:tree2seq", s, 99.0 if s <= 4 else 1.0, 50.0) for s in range(1, n + 1)]
    always = [fake_run("b:tree2seq", s, 50.5 + s, 40.0) for s in range(1, n + 1)]
    few = [fake_run("c:tree2seq", s, 100.0, 90.0) for s in (1, 2, 3)]
    systems = ["a:transformer", "a:tree2seq", "b:tree2seq", "c:tree2seq"]
    rates = seeds.seed_rates(linear + split + always + few, systems)
    assert [(r["generalizing"], len(r["seeds"])) for r in rates] == [(0, n), (4, n), (n, n), (3, 3)]
    assert rates[1]["values"] == [99.0] * 4 + [1.0] * (n - 4)
    # Wilson's interval of 4 of 10 (Newcombe 1998's formula, z 1.96), and of the extremes
    assert rates[1]["wilson_95"] == pytest.approx([0.1682, 0.6873], abs=1e-4)
    assert rates[0]["wilson_95"][0] == 0.0 and 0.0 < rates[0]["wilson_95"][1] < 0.35
    assert rates[2]["wilson_95"][1] == pytest.approx(1.0)
    tests = seeds.rate_tests(rates)  # c has 3 seeds: reported, not tested
    assert [(t["system"], t["other"]) for t in tests] == [
        ("a:transformer", "a:tree2seq"), ("a:transformer", "b:tree2seq"),
        ("a:tree2seq", "b:tree2seq")]
    # 0/10 against 4/10: the hypergeometric tail, both sides (0.0867); 0/10 against 10/10
    assert tests[0]["p_value"] == pytest.approx(0.08669, abs=1e-4)
    assert tests[1]["p_value"] == pytest.approx(2 / 184756, rel=1e-6)
    assert tests[1]["holm_p_value"] == pytest.approx(3 * tests[1]["p_value"])
    report = {"task": "tense", "rates": rates, "rate_tests": tests}
    table = seeds.rate_table(report)
    assert table[0] == ("| system (config:model) | seeds | seeds above 50% main verb | "
                        "95% Wilson interval | generalization: main verb % by seed |")
    assert table[3].startswith("| a:tree2seq | 10 | 4 (40%) | 17-69% | 1: 99.0, 2: 99.0, ")
    assert seeds.rate_test_table(report)[2].startswith(
        "| a:transformer (0/10) | a:tree2seq (4/10) | 0.087 | ")


@pytest.mark.slow
def test_seed_runs_train_and_score_each_system_once_and_share_one_json(written, tmp_path):
    """Two calls, a system each, into one JSON (as two CPU cores would run them), then a call
    with both: the runs are the config's own (its runner, best checkpoint), scored on test and
    the generalization set, and nothing is trained twice."""
    common = ["--seeds", "1", "--data", str(written), "--checkpoints", str(tmp_path / "ckpt"),
              "--json", str(tmp_path / "tense.json"), "--batch-size", "16"]
    short = ["--", "--max-update", "2"]
    seeds.main(["hierarchical-tense:transformer", *common, *short])
    seeds.main(["hierarchical-tense:tree2seq", *common, *short])
    logs = {model: tmp_path / "ckpt" / "seed-1" / "hierarchical-tense" / model / "train.log"
            for model in ("transformer", "tree2seq")}
    sizes = {model: log.stat().st_size for model, log in logs.items()}
    report = seeds.main(["hierarchical-tense:transformer", "hierarchical-tense:tree2seq",
                         *common, *short])
    assert {model: log.stat().st_size for model, log in logs.items()} == sizes
    assert report["systems"] == ["hierarchical-tense:transformer", "hierarchical-tense:tree2seq"]
    assert json.loads((tmp_path / "tense.json").read_text())["runs"] == report["runs"]
    for run in report["runs"]:
        assert (run["updates"], run["best_updates"], run["trees"]) == (2, 2, "gold")
        assert run["checkpoint"].endswith("checkpoint_best.pt")
        assert {split: cells["all"]["examples"] for split, cells in run["splits"].items()} == {
            "test": SIZES["test"], "gen": SIZES["gen"]}
    assert [row["seeds"] for row in report["summary"]] == [[1], [1]]
    assert report["tests"] == []  # one seed: nothing to test
    # a Transformer has no tree to cross-attend: only its self-attention on the prefix
    transformer = tmp_path / "ckpt" / "seed-1" / "hierarchical-tense" / "transformer"
    attention = hierarchical.decoder_attention(transformer / "checkpoint_best.pt",
                                               written / "tense",
                                               scoring.read_recipe(written / "tense"), "gen", 5)
    assert "cross_attention" not in attention
    assert attention["self_attention"]["all"]["examples"] == 5
    with pytest.raises(SystemExit, match="no config nowhere.yaml"):
        seeds.main(["nowhere:tree2seq", *common])
    # the decoder writing the targets' trees, scored on their leaves
    report = seeds.main(["hierarchical-tense-output-trees:tree2seq", *common, *short])
    run = next(r for r in report["runs"] if r["config"] == "hierarchical-tense-output-trees")
    assert run["splits"]["gen"]["all"]["examples"] == SIZES["gen"]
    # fairseq's transformer_lm on the sequences, scored on its continuations of the sources
    report = seeds.main(["hierarchical-tense-lm:transformer-lm", *common, *short])
    run = next(r for r in report["runs"] if r["model"] == "transformer-lm")
    assert (run["updates"], run["task"]) == (2, "tense")
    assert {split: cells["all"]["examples"] for split, cells in run["splits"].items()} == {
        "test": SIZES["test"], "gen": SIZES["gen"]}


def curve_run(system: str, seed: int, values: dict) -> dict:
    return {"system": system, "seed": seed,
            "points": [{"updates": u, "gen": {"all": {"scored_word": v}}}
                       for u, v in sorted(values.items())]}


def test_curves_say_when_each_seed_first_passes_50_and_90_percent():
    turns = curve_run("a:tree2seq", 1, {1000: 2.0, 2000: 55.0, 3000: 40.0, 4000: 95.0})
    stays = curve_run("a:tree2seq", 2, {1000: 1.0, 2000: 3.0, 3000: 2.0})
    report = {"task": "tense", "every": 1000, "systems": ["a:tree2seq"], "runs": [stays, turns]}
    report["summary"] = curves.summary(report)
    first, second = report["summary"]["seeds"]
    assert (first["seed"], first["first_above_50"], first["first_above_90"],
            first["at_3000"], first["at_end"], first["best"]) == (1, 2000, 4000, 40.0, 95.0, 95.0)
    assert (second["first_above_50"], second["first_above_90"], second["updates"]) == (
        None, None, 3000)
    # the mean over the seeds only where both have a point
    assert report["summary"]["means"]["a:tree2seq"] == [
        {"updates": 1000, "seeds": 2, "mean": 1.5}, {"updates": 2000, "seeds": 2, "mean": 29.0},
        {"updates": 3000, "seeds": 2, "mean": 21.0}]
    table = curves.curve_table(report)
    assert table[0] == ("| system (config:model) | seed | 1,000 | 3,000 | last (updates) | "
                        "first above 50% | first above 90% |")
    assert table[2:] == ["| a:tree2seq | 1 | 2.0 | 40.0 | 95.0 (4,000) | 2,000 | 4,000 |",
                         "| a:tree2seq | 2 | 1.0 | 2.0 | 2.0 (3,000) | - | - |"]


def test_curves_count_the_seeds_that_turn_and_those_that_stay():
    values = {"turns": {3000: 40.0, 4000: 95.0}, "drops": {3000: 60.0, 4000: 45.0, 5000: 70.0},
              "stays": {1000: 1.0, 3000: 80.0, 4000: 51.0}, "linear": {3000: 2.0, 4000: 3.0}}
    runs = [curve_run("a:tree2seq", seed, values[name]) for seed, name in enumerate(values, 1)]
    runs.append(curve_run("a:tree2seq", 9, {1000: 99.0}))  # not yet at 3,000: not counted
    runs.append(curve_run("b:transformer", 1, {3000: 0.5, 4000: 0.2}))
    report = {"task": "tense", "every": 1000, "systems": ["a:tree2seq", "b:transformer"],
              "runs": runs}
    report["summary"] = curves.summary(report)
    table = curves.turn_table(report)
    assert table[0].startswith("| system (config:model) | seeds | above 50% at 3,000 (of them")
    assert table[2:] == ["| a:tree2seq | 4 | 2 (1) | 2 (1) | 3 | 1 |",
                         "| b:transformer | 1 | 0 (0) | 1 (0) | 0 | 0 |"]


def test_curves_without_the_recipe_folder_stop_with_one_line_naming_its_file(tmp_path):
    with pytest.raises(SystemExit) as stop:
        curves.main(["hierarchical-tense:tree2seq", "--seeds", "1", "--every", "2",
                     "--max-update", "2", "--data", str(tmp_path / "data"),
                     "--checkpoints", str(tmp_path / "ckpt"),
                     "--json", str(tmp_path / "curves.json")])
    assert str(stop.value) == (f"error: {tmp_path / 'data' / 'tense' / 'recipe.json'}: missing "
                               "(written by the data's data-prep recipe)")
    assert not (tmp_path / "curves.json").exists() and not (tmp_path / "ckpt").exists()


@pytest.mark.slow
def test_curves_score_each_segment_once_and_train_again_where_checkpoints_are_gone(
        written, tmp_path):
    """Segments of 2 updates to 4, each end scored on the generalization set; a second call
    scores nothing again; with the checkpoints gone, a longer call trains from the start and
    scores only the new point; the figure is drawn from the JSON."""
    report_path, ckpt = tmp_path / "curves.json", tmp_path / "ckpt"
    common = ["hierarchical-tense:tree2seq", "--seeds", "1", "--every", "2", "--data",
              str(written), "--checkpoints", str(ckpt), "--json", str(report_path),
              "--batch-size", "16"]
    report = curves.main([*common, "--max-update", "4", "--figure", str(tmp_path / "c.png")])
    (run,) = report["runs"]
    assert [p["updates"] for p in run["points"]] == [2, 4]
    assert all(p["gen"]["all"]["examples"] == SIZES["gen"] and p["valid_loss"] is not None
               for p in run["points"])
    assert (tmp_path / "c.png").stat().st_size > 0
    log = ckpt / "seed-1" / "hierarchical-tense" / "tree2seq" / "train.log"
    size = log.stat().st_size
    assert curves.main([*common, "--max-update", "4"])["runs"][0]["points"] == run["points"]
    assert log.stat().st_size == size  # nothing trained
    for checkpoint in log.parent.glob("checkpoint*.pt"):
        checkpoint.unlink()
    again = curves.main([*common, "--max-update", "6"])["runs"][0]["points"]
    assert again[:2] == run["points"] and again[2]["updates"] == 6
    assert "--max-update 6" in log.read_text() and log.read_text().count("--max-update 6") == 1
