"""Targeted agreement items (bench.tasks.agreement_templates, agreement_defaults) and
their scoring
(bench/agreement_targeted.py): labels right by construction in every built-in condition,
balanced cells, deterministic draws, filtering by training frequency, user files read and
malformed ones refused as FILE:LINE, and the scorer's arithmetic on fake predictions."""

import collections
import json
import os
import subprocess
import sys

import pytest

from conftest import bench_command, PLUGIN_DIR, ROOT, run_cli

from fairseq_tree.errors import FairseqTreeError
from bench.tasks import agreement_defaults
from bench.tasks import agreement_templates as at
from fairseq_tree.trees.agreement import PLURAL, SINGULAR

from bench import agreement_targeted

BUILT_IN = at.read_templates(agreement_defaults.TEMPLATES, "<built-in templates>")
WORDS = at.read_words(agreement_defaults.WORDS, "<built-in words>")
NOUNS = {forms[k]: (SINGULAR, PLURAL)[k] for forms in WORDS.classes["noun"] for k in (0, 1)}
VERBS = {forms[k]: (SINGULAR, PLURAL)[k] for c in ("tverb", "iverb", "cverb")
         for forms in WORDS.classes[c] for k in (0, 1)}


@pytest.fixture(scope="module")
def items():
    return at.generate(BUILT_IN, WORDS, per_cell=40, seed=3)


def nouns_of(prefix: str) -> list[str]:
    """The numbers of the prefix's nouns, in order (the built-in noun forms are unambiguous)."""
    return [NOUNS[word] for word in prefix.lower().split() if word in NOUNS]


def test_every_condition_and_cell_of_the_built_in_templates(items):
    assert at.conditions(BUILT_IN) == [
        "simple", "pp", "pp-pp", "subject-relative", "object-relative",
        "object-relative-no-that", "sentential-complement", "vp-coordination"]
    cells = collections.Counter(agreement_targeted.by_cell(item) for item in items)
    assert cells == {at.cell_name(c, a): 40 for c in at.conditions(BUILT_IN) for a in (0, 1)}


# Where the subject is among a template's nouns, and where each verb's agreeing noun is.
SUBJECT_NOUN = {"simple": -1, "simple-fronted": -1, "pp": 0, "pp-pp": 0, "subject-relative": 0,
                "object-relative": 0, "object-relative-no-that": 0, "sentential-complement": -1,
                "vp-coordination": 0, "vp-coordination-object": 0}
VERB_AGREES_WITH = {"subject-relative": 0, "object-relative": 1, "object-relative-no-that": 1,
                    "sentential-complement": 0, "vp-coordination": 0,
                    "vp-coordination-object": 0}


def test_labels_are_the_subjects_number_and_attractors_the_other(items):
    for item in items:
        numbers = nouns_of(item.prefix)
        assert item.label == numbers[SUBJECT_NOUN[item.template]], item
        subject = SUBJECT_NOUN[item.template] % len(numbers)
        others = [n for k, n in enumerate(numbers) if k != subject]
        assert all((n != item.label) == item.attractor for n in others), item
        assert item.last_noun == numbers[-1]
        verbs = [VERBS[w] for w in item.prefix.split() if w in VERBS]
        if item.template in VERB_AGREES_WITH:
            assert verbs == [numbers[VERB_AGREES_WITH[item.template]]], item
        assert item.prefix[0].isupper()


def test_a_few_templates_literally():
    def one(name, label, attractor):
        template = next(t for t in BUILT_IN if t.name == name)
        item, = at.template_items(template, label, attractor, 1, WORDS, seed=1, capitalize=False)
        return item.prefix.split()
    words = one("object-relative", SINGULAR, True)  # the N that the Ns V-pl
    assert words[0] == "the" and NOUNS[words[1]] == SINGULAR and words[2:4] == ["that", "the"]
    assert NOUNS[words[4]] == PLURAL and VERBS[words[5]] == PLURAL and len(words) == 6
    words = one("sentential-complement", PLURAL, True)  # the N V-sg that the Ns
    assert NOUNS[words[1]] == SINGULAR and VERBS[words[2]] == SINGULAR
    assert words[3:5] == ["that", "the"] and NOUNS[words[5]] == PLURAL
    words = one("vp-coordination", PLURAL, False)  # the Ns V-pl and
    assert NOUNS[words[1]] == PLURAL and VERBS[words[2]] == PLURAL and words[3:] == ["and"]
    words = one("simple-fronted", SINGULAR, True)  # PREP the Ns , the N
    assert words[1:] == ["the", words[2], ",", "the", words[5]]
    assert (NOUNS[words[2]], NOUNS[words[5]]) == (PLURAL, SINGULAR)


def test_cells_are_balanced_and_split_over_their_templates(items):
    by = collections.Counter((agreement_targeted.by_cell(i), i.template, i.label) for i in items)
    assert by[("simple", "simple", SINGULAR)] == by[("simple", "simple-fronted", PLURAL)] == 10
    assert by[("simple + attractor", "simple-fronted", SINGULAR)] == 20
    assert ("simple + attractor", "simple", SINGULAR) not in by  # no attractor slot
    assert by[("vp-coordination", "vp-coordination", PLURAL)] == 10
    for cell, count in collections.Counter(agreement_targeted.by_cell(i) for i in items).items():
        assert by_label(items, cell) == {SINGULAR: count // 2, PLURAL: count // 2}, cell
    with pytest.raises(FairseqTreeError, match="give an even number"):
        at.generate(BUILT_IN, WORDS, per_cell=7)


def by_label(items, cell):
    return collections.Counter(i.label for i in items if agreement_targeted.by_cell(i) == cell)


def test_draws_are_deterministic_and_distinct(items):
    assert at.generate(BUILT_IN, WORDS, per_cell=40, seed=3) == items
    assert at.generate(BUILT_IN, WORDS, per_cell=40, seed=4) != items
    # One template's items do not depend on the others'.
    pp = [t for t in BUILT_IN if t.condition == "pp"]
    assert at.generate(pp, WORDS, per_cell=40, seed=3) == [i for i in items if i.condition == "pp"]
    for item in items:  # no noun twice in one item
        nouns = [w for w in item.prefix.lower().split() if w in NOUNS]
        assert len({WORDS.classes["noun"].index(next(f for f in WORDS.classes["noun"] if n in f))
                    for n in nouns}) == len(nouns)
    pp_items = [i.prefix for i in items if i.template == "pp"]
    assert len(set(pp_items)) == len(pp_items)  # redrawn: thousands of combinations


def test_frequency_filter_keeps_words_whose_every_form_is_common():
    counts = at.token_counts(["The king of the kings says"] * 5 + ["the prophets", "prophet"] * 4)
    kept, dropped = at.frequent_words(WORDS, counts, min_count=5)
    assert kept.classes["noun"] == [("king", "kings")]
    assert {"prophet": 4, "prophets": 4} in dropped["noun"]
    assert {"priest": 0, "priests": 0} in dropped["noun"]
    assert kept.classes["prep"] == [("of",)] and "the" not in str(kept.classes)
    kept, dropped = at.frequent_words(WORDS, counts, min_count=6)
    assert kept.classes["noun"] == [] and len(dropped["noun"]) == len(WORDS.classes["noun"])
    with pytest.raises(FairseqTreeError) as caught:
        at.generate(BUILT_IN, kept)
    assert str(caught.value) == ("<built-in templates>:2: every word of class 'noun' was left "
                                 "out as rare")
    kept, _ = at.frequent_words(WORDS, at.token_counts(["king kings prophet prophets"] * 10), 10)
    assert kept.classes["noun"] == [("king", "kings"), ("prophet", "prophets")]
    pp_pp = [t for t in BUILT_IN if t.name == "pp-pp"]
    kept, _ = at.frequent_words(WORDS, at.token_counts(["king kings prophet prophets of in"] * 9),
                                9)
    with pytest.raises(FairseqTreeError) as caught:
        at.generate(pp_pp, kept)
    assert str(caught.value) == ("<built-in templates>:5: 3 slots of class 'noun', but it has 2 "
                                 "words")


def test_a_user_template_and_word_file(tmp_path):
    words = at.read_words("# mine\nnoun  dog  dogs\nnoun  cat  cats\nverb  barks  bark\n"
                          "verb  howls  howl\nadv  loudly\nprep  next_to\n", "words.txt")
    templates = at.read_templates(
        "\n# a comment\nnear  near-1  the {subj} {prep} the {attr}\n"
        "loud  loud-1  the {noun:subj} {verb:subj} {adv} and {verb:pl}\n", "templates.txt")
    items = at.generate(templates, words, per_cell=4, seed=1, capitalize=False)
    assert {i.prefix for i in items if i.condition == "near" and i.attractor} == {
        "the dog next to the cats", "the cat next to the dogs",
        "the dogs next to the cat", "the cats next to the dog"}
    loud = [i for i in items if i.condition == "loud"]
    assert len(loud) == 4 and not any(i.attractor for i in loud)  # no :attr slot: one cell
    assert {i.prefix for i in loud if i.label == PLURAL} <= {  # two verbs, distinct
        f"the {n} {a} loudly and {b}" for n in ("dogs", "cats")
        for a, b in (("bark", "howl"), ("howl", "bark"))}
    assert {i.prefix.split()[2] for i in loud if i.label == SINGULAR} <= {"barks", "howls"}


@pytest.mark.parametrize("text, error", [
    ("noun king\nnoun man men\n", "words.txt:2: 2 forms, but class 'noun' has 1 (words.txt:1)"),
    ("noun king kings\n\nnoun king kings\n",
     "words.txt:3: 'king kings' is already in class 'noun' (words.txt:1)"),
    ("noun a b c\n", "words.txt:1: 4 fields, expected CLASS SINGULAR PLURAL or CLASS WORD"),
    ("subj king kings\n", "words.txt:1: 'subj' is a slot's shorthand, not a class"),
])
def test_a_malformed_word_file_is_refused_at_its_line(text, error):
    with pytest.raises(FairseqTreeError) as caught:
        at.read_words(text, "words.txt")
    assert str(caught.value) == error


@pytest.mark.parametrize("text, error", [
    ("pp pp-1\n", "t.txt:1: 2 fields, expected CONDITION TEMPLATE-ID PATTERN..."),
    ("pp a the {subj}\n# c\npp a the {attr}\n", "t.txt:3: template id 'a' is already used "
                                                 "(t.txt:1)"),
    ("pp a the {noun:who}\n", "t.txt:1: slot {noun:who}: expected {CLASS} or {CLASS:ROLE} with "
                              "ROLE one of subj, attr, sg, pl"),
    ("pp a the {subj}s\n", "t.txt:1: '{subj}s': a slot is a whole word, {CLASS} or "
                           "{CLASS:ROLE}"),
    ("pp a the {attr} of the king\n", "t.txt:1: no subject slot ({subj} or {CLASS:subj}): the "
                                      "label is the subject's number"),
])
def test_a_malformed_template_file_is_refused_at_its_line(text, error):
    with pytest.raises(FairseqTreeError) as caught:
        at.read_templates(text, "t.txt")
    assert str(caught.value) == error


@pytest.mark.parametrize("pattern, error", [
    ("the {subj} {adverb}", "t.txt:1: no word list of class 'adverb' (the lists have cverb, "
                            "fronted, iverb, noun, prep, tverb)"),
    ("the {subj} {tverb}", "t.txt:1: {tverb}: class 'tverb' is inflected: give {CLASS:ROLE}"),
    ("the {subj} {prep:subj}", "t.txt:1: {prep:subj}: class 'prep' is uninflected: give "
                               "{CLASS}"),
])
def test_templates_are_checked_against_the_word_lists(pattern, error):
    templates = at.read_templates(f"c t-1 {pattern}\n", "t.txt")
    with pytest.raises(FairseqTreeError) as caught:
        at.generate(templates, WORDS, per_cell=2)
    assert str(caught.value) == error


def test_items_file_format(items):
    lines = at.format_items(items[:2]).splitlines()
    assert lines[0] == "prefix\tlabel\tcondition\tattractor\ttemplate\tlast_noun"
    assert lines[1].split("\t")[1:] == [items[0].label, "simple", "no", "simple",
                                        items[0].last_noun]


def test_items_read_back_as_written(items):
    assert at.read_items(at.format_items(items), "i.tsv") == items


@pytest.mark.parametrize("text,error", [
    ("", "i.tsv:1: expected the header 'prefix label condition attractor template last_noun'"),
    ("prefix\tlabel\tcondition\tattractor\ttemplate\tlast_noun\n", "i.tsv: no items"),
    ("prefix\tlabel\tcondition\tattractor\ttemplate\tlast_noun\nThe king\t2\tsimple\tno\t"
     "simple\t0\n", "i.tsv:2: expected 6 tab-separated fields (prefix, label 0/1, condition, "
     "attractor yes/no, template, last noun 0/1/-)"),
])
def test_a_malformed_items_file_is_refused_at_its_line(text, error):
    with pytest.raises(FairseqTreeError) as caught:
        at.read_items(text, "i.tsv")
    assert str(caught.value) == error


# ---------------------------------------------------------------------------------------------
# Scoring (bench/agreement_targeted.py), on fake predictions


def item(condition, attractor, label, template=None):
    return at.Item("x", label, condition, attractor, template or condition, label)


def test_accuracy_per_cell_and_template():
    items = [item("pp", False, "0"), item("pp", False, "1"), item("pp", True, "0"),
             item("pp", True, "1"), item("pp", True, "1", "pp-2")]
    rows = agreement_targeted.accuracy_rows(items, ["0", "0", "1", "1", "1"],
                                            agreement_targeted.by_cell)
    assert rows == {"pp": {"accuracy": 50.0, "count": 2},
                    "pp + attractor": {"accuracy": 66.67, "count": 3}}
    rows = agreement_targeted.accuracy_rows(items, ["0", "0", "1", "1", "1"],
                                            agreement_targeted.by_template)
    assert rows["pp + attractor"] == {"accuracy": 50.0, "count": 2}
    assert rows["pp-2 + attractor"] == {"accuracy": 100.0, "count": 1}


def fake_recipe(folder, train_tok: list[str], labels: list[str]):
    (folder / "text").mkdir(parents=True)
    (folder / "text" / "train.tok").write_text("\n".join(train_tok) + "\n")
    views = folder / "views" / "agreement"
    views.mkdir(parents=True)
    (views / "train.label").write_text("".join(f"{label}\n" for label in labels))
    (views / "train.meta").write_text("".join(
        f"bible.db:4 1 1:{k}\tnoun\t0\t1\t1\tis\t-\n" for k in range(len(labels))))
    (folder / "data-bin").mkdir()
    return folder


class FakeHub:
    """The classification hub's interface (predict, bracketed) over fixed answers: ``answer``
    maps (prefix, gold label) to the class predicted."""

    Prediction = collections.namedtuple("Prediction", "label probabilities")

    def __init__(self, answer, gold: dict):
        self.answer, self.gold = answer, gold

    def predict(self, prefixes, names):
        assert len(names) == len(prefixes) and names[0].endswith("items.tsv:2")
        labels = [self.answer(p, self.gold[p]) for p in prefixes]
        return [self.Prediction(label, {"0": 0.25, "1": 0.75} if label == "1" else
                                {"0": 0.75, "1": 0.25}) for label in labels]

    def bracketed(self, prefixes, trees, names):
        assert not trees
        return [(f"(S (NP {p}))", None) for p in prefixes]


def test_the_command_scores_seeds_on_fake_predictions(tmp_path, capsys):
    data = fake_recipe(tmp_path / "agreement", ["the king kings prophet prophets of with"] * 3
                       + ["the son sons"], ["0", "0", "1"])
    (tmp_path / "t.txt").write_text("pp pp the {subj} {prep} the {attr}\n"
                                    "simple simple the {subj}\n")
    (tmp_path / "w.txt").write_text("noun king kings\nnoun prophet prophets\nnoun son sons\n"
                                    "prep of\nprep with\n")
    gold = {}  # prefix -> label, from the items file (a prefix of "simple" may come twice)
    def load(checkpoint, folder):
        assert folder == data
        gold.update(line.split("\t")[:2] for line in
                    (tmp_path / "items.tsv").read_text().splitlines()[1:])
        return FakeHub({  # a:1 always right; a:2 "0" in the pp cells; b always "0"
            "a1": lambda prefix, label: label,
            "a2": lambda prefix, label: label if " of " not in prefix and " with " not in prefix
            or label == "0" else "0",
            "b": lambda prefix, label: "0"}[checkpoint], gold)
    report = agreement_targeted.main(
        ["--data", str(tmp_path), "--templates", str(tmp_path / "t.txt"), "--words",
         str(tmp_path / "w.txt"), "--per-cell", "4", "--min-count", "3",
         "--checkpoint", "a:1=a1", "--checkpoint", "a:2=a2", "--checkpoint", "b=b",
         "--items", str(tmp_path / "items.tsv"), "--json", str(tmp_path / "r.json"),
         "--markdown", str(tmp_path / "r.md"), "--predictions", str(tmp_path / "p.tsv")],
        load=load)
    assert json.loads((tmp_path / "r.json").read_text()) == report
    assert report["dropped_as_rare"] == {"noun": [{"son": 1, "sons": 1}]}
    assert report["words"]["noun"] == {"listed": 3, "kept": 2}
    assert report["majority_class"] == "0"
    assert list(report["results"]["a:1"]) == ["pp", "pp + attractor", "simple"]
    assert report["results"]["a:2"]["pp + attractor"] == {"accuracy": 50.0, "count": 4}
    assert report["results"]["b"]["simple"] == {"accuracy": 50.0, "count": 4}
    assert report["results"]["last noun"]["pp + attractor"]["accuracy"] == 0.0
    assert report["results"]["last noun"]["pp"]["accuracy"] == 100.0
    cell = report["summary"]["a"]["pp + attractor"]
    assert (cell["accuracies"], cell["mean"], cell["sd"]) == ([100.0, 50.0], 75.0, 35.36)
    assert report["cells"]["pp"] == {"items": 4, "singular": 2, "plural": 2, "distinct": 4}
    assert report["tree_shapes"]["pp + attractor"] == {
        "distinct": 1, "commonest": [["(S (NP _ _ _ _ _))", 4]]}
    table = (tmp_path / "r.md").read_text().splitlines()
    assert table[0] == ("| condition | items | chance | majority class | last noun | b | "
                        "a (2 seeds) |")
    assert table[3] == "| pp + attractor | 4 | 50.00 | 50.00 | 0.00 | 50.00 | 75.00 ± 35.36 |"
    out = capsys.readouterr().out
    assert "noun: fewer than 3 in text/train.tok, left out: son 1 / sons 1" in out
    items = (tmp_path / "items.tsv").read_text().splitlines()
    assert len(items) == 13 and items[0].startswith("prefix\tlabel")
    predictions = [line.split("\t") for line in (tmp_path / "p.tsv").read_text().splitlines()]
    assert predictions[0][6:] == ["tree", "a:1", "a:1 P(1)", "a:2", "a:2 P(1)", "b", "b P(1)"]
    for row, item in zip(predictions[1:], items[1:], strict=True):
        assert row[:6] == item.split("\t") and row[6] == f"(S (NP {row[0]}))"
        assert row[7:9] == [row[1], "0.75" if row[1] == "1" else "0.25"]
    assert report["predictions"]["b"] == "0" * 12
    # --items-from: the same items, read back, give the same scores without the word lists
    again = agreement_targeted.main(
        ["--data", str(tmp_path), "--items-from", str(tmp_path / "items.tsv"),
         "--checkpoint", "a:1=a1", "--checkpoint", "a:2=a2", "--checkpoint", "b=b"], load=load)
    assert again["results"] == report["results"] and again["conditions"] == report["conditions"]
    assert again["words"] is None and again["settings"]["items_from"] == str(
        tmp_path / "items.tsv")


def test_a_malformed_user_file_ends_the_command_in_one_line(tmp_path):
    data = fake_recipe(tmp_path / "agreement", ["the king kings"], ["0"])
    (tmp_path / "t.txt").write_text("# header\npp pp the {subj} {prep the {attr}\n")
    with pytest.raises(SystemExit) as caught:
        agreement_targeted.main(["--data", str(data), "--templates", str(tmp_path / "t.txt")])
    assert str(caught.value) == (f"agreement_targeted.py: error: {tmp_path / 't.txt'}:2: "
                                 "'{prep': a slot is a whole word, {CLASS} or {CLASS:ROLE}")


def test_write_defaults_round_trips(tmp_path):
    agreement_targeted.main(["--write-defaults", str(tmp_path)])
    assert at.read_templates((tmp_path / "templates.txt").read_text(),
                             "<built-in templates>") == BUILT_IN
    assert at.read_words((tmp_path / "words.txt").read_text()).classes == WORDS.classes


# ---------------------------------------------------------------------------------------------
# End to end: the agreement recipe from the stand-in Bibles (the stand-in spaCy pipeline, BPE),
# a model trained 3 updates, the items read through the classification hub


TRAIN = ["--user-dir", PLUGIN_DIR, "--task", "tree_classification", "--arch",
         "tree_classifier_tiny", "--optimizer", "adam", "--lr", "0.003", "--criterion",
         "sentence_prediction", "--max-update", "3", "--seed", "1", "--num-workers", "0",
         "--max-tokens", "2048", "--no-epoch-checkpoints", "--disable-validation"]


@pytest.fixture(scope="module")
def recipe_and_model(tmp_path_factory):
    """The agreement recipe's folder and a tree_classifier trained 3 updates on it."""
    pytest.importorskip("spacy")
    import classification_standins as standins

    root = tmp_path_factory.mktemp("targeted")
    env = {**os.environ, "DATA": str(root / "data"), "WORKERS": "1",
           "FAIRSEQ_TREE_VENV": sys.prefix, "PYTHONWARNINGS": "ignore", "PARSER": "spacy",
           "SPACY_MODEL": str(standins.agreement_pipeline(root / "agreement_en")),
           "BIBLE_DIR": str(standins.agreement_bible(root / "bible")),
           "AGREEMENT_CODES": "4,3", "AGREEMENT_SPLIT": "50:25:25"}
    proc = subprocess.run(["bash", str(ROOT / "data-prep" / "prepare-agreement.sh")],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    work = root / "data" / "agreement"
    run_cli("fairseq-train", work / "data-bin" / "agreement", *TRAIN, "--save-dir", root / "ckpt")
    return work, root / "ckpt" / "checkpoint_last.pt"


def run_targeted(*args):
    return subprocess.run([*bench_command("agreement_targeted"),
                           *map(str, args)], capture_output=True, text=True, timeout=600,
                          check=False)


@pytest.mark.slow
def test_end_to_end_through_the_classification_hub(recipe_and_model, tmp_path):
    work, checkpoint = recipe_and_model
    # The stand-in Bibles have no noun in both numbers: every built-in one is rare there.
    proc = run_targeted("--data", work.parent, "--min-count", "1")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1] == ("agreement_targeted.py: error: <built-in "
                                            "templates>:2: every word of class 'noun' was left "
                                            "out as rare")
    assert "noun: fewer than 1 in text/train.tok, left out: king 0 / kings 0" in proc.stdout
    proc = run_targeted("--data", work.parent, "--min-count", "0", "--per-cell", "4",
                        "--checkpoint", f"tc:1={checkpoint}", "--checkpoint",
                        f"tc:2={checkpoint}", "--items", tmp_path / "items.tsv",
                        "--predictions", tmp_path / "p.tsv", "--json", tmp_path / "r.json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    rows = [line.split("\t") for line in (tmp_path / "p.tsv").read_text().splitlines()]
    header, rows = rows[0], rows[1:]
    assert len(rows) == 16 * 4 and header[6:] == ["tree", "tc:1", "tc:1 P(1)", "tc:2",
                                                  "tc:2 P(1)"]
    for row in rows:  # the stand-in parser's trees, with its tags over the prefix's words
        assert row[6].startswith("(") and row[0].split()[-1] in row[6]
        assert row[7] == row[9] and (float(row[8]) > 0.5) == (row[7] == "1")
    for cell, scores in report["results"]["tc:1"].items():
        mine = [row for row in rows if at.cell_name(row[2], row[3] == "yes") == cell]
        right = sum(row[7] == row[1] for row in mine)
        assert scores == {"accuracy": round(100 * right / len(mine), 2), "count": len(mine)}
        assert report["summary"]["tc"][cell]["sd"] == 0.0
    assert set(report["tree_shapes"]) == set(report["templates"]["tc:1"])
