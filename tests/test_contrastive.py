"""The contrastive English -> French agreement set (data-prep/contrastive_agreement.py): gold by
construction, one agreeing word changed per contrast, cells balanced; and bench/contrastive.py
scoring a set with real checkpoints."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import bench_command, ROOT, write_lines
from fairseq_tree.checkpoints import load_checkpoint

import contrastive_agreement as ca

GENERATOR = ROOT / "data-prep" / "contrastive_agreement.py"
WORDS = ca.read_words(ca.DEFAULT_WORDS)


def generate(tmp_path, *args, check=True):
    proc = subprocess.run([sys.executable, GENERATOR, "--output", tmp_path / "set",
                           *map(str, args)], capture_output=True, text=True)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def read_items(folder: Path) -> list[dict]:
    lines = (folder / "items.tsv").read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"))) for line in lines[1:]]


def french_number(phrase_start: str) -> str:
    """The number a French noun phrase's article or contracted *de* shows."""
    return "pl" if phrase_start in ("les", "des", "Les") else "sg"


def test_every_contrast_changes_the_agreeing_word_only(tmp_path):
    generate(tmp_path, "--per-cell", 24, "--seed", 3)
    items = read_items(tmp_path / "set")
    verb_forms = {form: number for verb in WORDS.verbs for number, form in verb.fr.items()}
    adjective_forms = {form: key for a in WORDS.adjectives for key, form in a.fr.items()}
    cells = {}
    for item in items:
        key = (item["phenomenon"], item["condition"], item["attractor"])
        cells.setdefault(key, []).append(item)
        ref, con = item["reference"].split(), item["contrast"].split()
        assert len(ref) == len(con) and ref[-1].endswith(".")
        changed = [k for k, (a, b) in enumerate(zip(ref, con)) if a != b]
        assert changed == [len(ref) - 1], item  # the sentence-final verb or adjective
        last_ref, last_con = ref[-1][:-1], con[-1][:-1]
        number = item["subject_number"]
        if item["phenomenon"] == "verb-number":
            assert item["feature"] == "number"
            assert verb_forms[last_ref] == number and verb_forms[last_con] != number
        else:
            assert item["feature"] == "gender"
            assert adjective_forms[last_ref] == (item["subject_gender"], number)
            assert adjective_forms[last_con] == ("mf".replace(item["subject_gender"], ""), number)
        # French contractions and elision: never "de le", "de les", "le a...", "la e..."
        text = " " + item["reference"].lower()
        assert " de le " not in text and " de les " not in text
        for article in (" le ", " la "):
            for word in text.split(article)[1:]:
                assert word[0] not in ca.VOWELS, item["reference"]
        assert ref[0][0].isupper() and item["source"].startswith("The ")
    assert sorted(cells) == sorted(
        (p, c, a) for p, conditions in ca.CELLS.items() for c, has in conditions.items()
        for a in (("0", "1") if has else ("0",)))
    for (phenomenon, condition, attractor), cell in cells.items():
        assert len(cell) == 24
        assert sum(i["subject_number"] == "sg" for i in cell) == 12
        assert len({i["source"] for i in cell}) == 24


def test_attractors_have_the_other_number_or_gender(tmp_path):
    """In an attractor cell every noun between subject and verb has the other number (verbs) or
    gender (adjectives); without one, the subject's."""
    gender = {n.fr[k]: n.gender for n in WORDS.nouns for k in ca.NUMBERS}
    generate(tmp_path, "--per-cell", 12)
    for item in read_items(tmp_path / "set"):
        if item["condition"] == "simple":
            continue
        ref = item["reference"].replace("'", "' ").split()
        inner = [k for k, w in enumerate(ref) if w.rstrip(".") in gender][1:]
        if item["condition"] == "subject-relative" or item["condition"] == "object-relative":
            inner = inner[:1]
        assert inner, item
        for k in inner:
            if item["phenomenon"] == "verb-number":
                other = french_number(ref[k - 1]) != item["subject_number"]
            else:
                other = gender[ref[k]] != item["subject_gender"]
            assert other == (item["attractor"] == "1"), item


def test_word_list_errors_name_the_line(tmp_path):
    lines = ca.DEFAULT_WORDS.read_text(encoding="utf-8").splitlines()
    cases = {
        "gender": ("noun\tking\tkings\troi\trois\tx", r":\d+: gender 'x' is not m or f"),
        "same": ("verb\tputs\tput\tmet\tmet", r":\d+: the French forms are the same"),
        "short": ("adj\tgood\tbon\tbonne", r":\d+: a adj line has 5 fields"),
    }
    for name, (bad, message) in cases.items():
        words = write_lines(tmp_path / f"{name}.tsv", [*lines, bad])
        proc = generate(tmp_path, "--words", words, check=False)
        assert proc.returncode != 0
        assert proc.stderr.startswith(f"contrastive_agreement: error: {words}:{len(lines) + 1}")
        assert "Traceback" not in proc.stderr
        assert re.search(message, proc.stderr), proc.stderr


def test_vocabulary_check_refuses_unseen_words(tmp_path):
    recipe = tmp_path / "recipe"
    (recipe / "tok").mkdir(parents=True)
    (recipe / "recipe.json").write_text(json.dumps({"src": "en", "tgt": "fr"}))
    english, french = WORDS.forms()
    write_lines(recipe / "tok" / "train.en", [" ".join(sorted(english - {"weeps"}))])
    write_lines(recipe / "tok" / "train.fr", [" ".join(sorted(french))])
    proc = generate(tmp_path, "--check-vocabulary", recipe, check=False)
    assert proc.returncode != 0 and "English ['weeps'], French []" in proc.stderr
    write_lines(recipe / "tok" / "train.en", [" ".join(sorted(english))])
    write_lines(recipe / "tok" / "train.fr", [" ".join(sorted(french)), "grande grande grand"])
    generate(tmp_path, "--check-vocabulary", recipe, "--per-cell", 4)
    summary = json.loads((tmp_path / "set" / "summary.json").read_text())
    assert summary["vocabulary_check"]["unseen_en"] == [] and summary["items"] == 14 * 4
    counts = summary["vocabulary_check"]["training_counts_fr"]
    assert counts["grande"] == 3 and counts["grand"] == 2 and counts["bonnes"] == 1
    assert sorted(counts) == sorted(french)


@pytest.fixture(scope="module")
def recipe(example, tmp_path_factory):
    """The example's data as a recipe folder (recipe.json), its trees parsed flat."""
    work, _ = example
    (work / "recipe.json").write_text(json.dumps({
        "pair": "example", "src": "en", "tgt": "fr", "bpe_codes": "bpe/codes",
        "lowercase": False, "parser": "flat"}))
    return work


@pytest.mark.slow
def test_bench_scores_every_item_with_every_model(recipe, trained, tmp_path):
    """Seeds of two models (the same checkpoint): accuracies per cell that the per-item scores
    give, and a reference above its contrast exactly where the scores say so."""
    generate(tmp_path, "--per-cell", 4)
    checkpoint = tmp_path / "checkpoint.pt"
    shutil.copyfile(trained[1], checkpoint)
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [*bench_command("contrastive"), "--set", tmp_path / "set",
         "--recipe", recipe, *[arg for name in ("a:1", "a:2", "b:1", "b:2")
                               for arg in ("--checkpoint", f"{name}={checkpoint}")],
         "--baseline", "b", "--json", out, "--markdown", tmp_path / "table.md",
         "--scores", tmp_path / "scores"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    rows = (tmp_path / "scores" / "a.s1.tsv").read_text().splitlines()[1:]
    correct = [int(row.split("\t")[4]) for row in rows]
    assert len(correct) == 14 * 4
    assert all((float(r.split("\t")[2]) > float(r.split("\t")[3])) == bool(c)
               for r, c in zip(rows, correct))
    table = report["results"]["a:1"]
    assert table["all items"] == {"accuracy": round(100 * sum(correct) / len(correct), 2),
                                  "count": len(correct)}
    assert table["verb-number pp + attractor"]["count"] == 4
    # each phenomenon by the subject's value of the feature it flips
    items = read_items(tmp_path / "set")
    for phenomenon, feature, values in (("verb-number", "number", "sg pl"),
                                        ("adjective-gender", "gender", "m f")):
        for value in values.split():
            oks = [ok for ok, item in zip(correct, items) if item["phenomenon"] == phenomenon
                   and item[f"subject_{feature}"] == value]
            assert table[f"{phenomenon} ({value} subjects)"] == {
                "accuracy": round(100 * sum(oks) / len(oks), 2), "count": len(oks)}
    assert "adjective-gender (sg subjects)" not in table
    assert report["results"]["a:1"] == report["results"]["b:2"]
    test = report["summary"]["a"]["all items"]["vs b"]
    assert test["mean_difference"] == 0 and test["p_value"] is None  # same checkpoint: no test
    markdown = (tmp_path / "table.md").read_text()
    assert "| cell (items) | a (2) | b (2) | a - b |" in markdown
    assert "| +0.00 (the same difference on every seed: no spread to test) |" in markdown
    assert report["scored_in_this_call"] == ["a:1", "a:2", "b:1", "b:2"]
    again = subprocess.run(
        [*bench_command("contrastive"), "--set", tmp_path / "set",
         "--recipe", recipe, "--checkpoint", f"a:1={checkpoint}", "--checkpoint",
         f"c:1={checkpoint}", "--json", out], capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    resumed = json.loads(out.read_text())
    assert resumed["scored_in_this_call"] == ["c:1"]  # a:1's results are kept
    assert resumed["results"]["c:1"] == resumed["results"]["a:1"] == table
    # the run trained on under the same path: its results are not kept
    state = load_checkpoint(checkpoint)
    state["optimizer_history"][-1]["num_updates"] += 1
    torch.save(state, checkpoint)
    retrained = subprocess.run(
        [*bench_command("contrastive"), "--set", tmp_path / "set",
         "--recipe", recipe, "--checkpoint", f"a:1={checkpoint}", "--checkpoint",
         f"c:1={trained[1]}", "--json", out], capture_output=True, text=True, timeout=600)
    assert retrained.returncode == 0, retrained.stderr[-3000:]
    scored = json.loads(out.read_text())
    # c:1 moved to a file of the same bytes: kept
    assert scored["scored_in_this_call"] == ["a:1"]
    # a:1's file gone (a run trained elsewhere): kept only when asked, and said so
    checkpoint.unlink()
    names = ["--checkpoint", f"a:1={checkpoint}", "--checkpoint", f"c:1={trained[1]}"]
    base = [*bench_command("contrastive"), "--set", tmp_path / "set",
            "--recipe", recipe, "--json", out]
    refused = subprocess.run([*base, *names], capture_output=True, text=True, timeout=600)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert refused.stderr.strip().endswith(f"{checkpoint}: no such checkpoint file")
    kept = subprocess.run([*base, *names, "--keep-missing"], capture_output=True, text=True,
                          timeout=600)
    assert kept.returncode == 0, kept.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["scored_in_this_call"] == [] and report["kept_without_file"] == ["a:1"]
    assert report["results"]["a:1"] == scored["results"]["a:1"]
    assert report["checkpoint_sha256"]["a:1"] == scored["checkpoint_sha256"]["a:1"]
    assert report["training"]["a:1"] == scored["training"]["a:1"]
    never = subprocess.run([*base, *names, "--checkpoint", f"d:1={checkpoint}", "--keep-missing"],
                           capture_output=True, text=True, timeout=600)
    assert never.returncode != 0 and "Traceback" not in never.stderr
    assert never.stderr.strip().endswith(
        f"{checkpoint}: no such checkpoint file, and no results for d:1 in {out} to keep")


@pytest.mark.slow
def test_bench_names_a_missing_checkpoint(recipe, tmp_path):
    generate(tmp_path, "--per-cell", 2)
    missing = tmp_path / "none.pt"
    proc = subprocess.run(
        [*bench_command("contrastive"), "--set", tmp_path / "set",
         "--recipe", recipe, "--checkpoint", f"a:1={missing}"],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().endswith(
        f"contrastive.py: error: {missing}: no such checkpoint file")


@pytest.mark.slow
def test_bench_names_a_parser_that_cannot_run(recipe, trained, tmp_path):
    """A recipe whose parser is missing here (stanza without its models) is one line naming the
    parser and how to get it, not a traceback from inside the hub."""
    generate(tmp_path, "--per-cell", 2)
    other = tmp_path / "recipe"
    shutil.copytree(recipe, other)
    record = json.loads((other / "recipe.json").read_text())
    (other / "recipe.json").write_text(json.dumps({**record, "parser": "stanza"}))
    env = dict(os.environ, STANZA_RESOURCES_DIR=str(tmp_path / "no-stanza"))
    proc = subprocess.run(
        [*bench_command("contrastive"), "--set", tmp_path / "set",
         "--recipe", other, "--checkpoint", f"a:1={trained[1]}"],
        capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("contrastive.py: error: stanza models for 'en'"), last


def test_a_difference_the_same_every_seed_is_not_tested():
    """Accuracies on 200 items move in steps of 0.5, so two or three seeds can differ from the
    baseline by the same amount: sd 0, where a t-test would give a t of infinity and a p of 0
    that is no evidence. The report shows the difference untested and leaves it out of Holm's
    family."""
    from bench import contrastive
    from bench.lib.report import seed_summary

    def table(same, varying):
        return {"same": {"accuracy": same, "count": 200},
                "varying": {"accuracy": varying, "count": 200}}

    results = {"tree:1": table(60.0, 70.0), "tree:2": table(50.0, 81.0),
               "base:1": table(57.0, 60.0), "base:2": table(47.0, 62.5)}
    summary = seed_summary(results, "base")
    same = summary["tree"]["same"]["vs base"]
    assert same["sd"] == 0 and same["p_value"] is None  # not the t-test's p of 0
    assert same["no_test"] == "the same difference on every seed: no spread to test"
    tests = contrastive.holm_corrected(summary)
    assert [(t["system"], t["column"]) for t in tests] == [("tree", "varying")]
    lines = contrastive.cell_table(summary, "base", tests)
    assert lines[2] == ("| same (200) | 55.00 ± 7.07 | 52.00 ± 7.07 | "
                        "+3.00 (the same difference on every seed: no spread to test) |")
    varying = tests[0]
    p = f"{varying['p_value']:.2g}"
    assert lines[3].endswith(f"| +14.25 (p {p}, Holm {p}) |")  # a family of one
