"""bench/lib/report.py's seed-level paired t-test (the "t-test p" of bench/RESULTS.md's tables)
against a computation by hand and against Student's t tables, and Holm's correction over the
tests of a report."""

import json
import math

import pytest
from conftest import ROOT

from bench.lib import report

# French -> English, the Transformer and tree2seq on induced trees, sacreBLEU of seeds 1-3
INDUCED, TRANSFORMER = [13.49, 12.96, 13.03], [13.90, 13.15, 13.99]


def test_paired_t_test_against_a_hand_computation():
    # by hand: differences 0.41, 0.19, 0.96; mean 0.52; sample sd
    # sqrt(((0.41 - m)^2 + (0.19 - m)^2 + (0.96 - m)^2) / 2); t = m / (sd / sqrt 3); with 2 degrees
    # of freedom Student's t has P(|T| <= t) = t / sqrt(t^2 + 2)
    differences = [0.41, 0.19, 0.96]
    mean = sum(differences) / 3
    sd = math.sqrt(sum((d - mean) ** 2 for d in differences) / 2)
    t = mean / (sd / math.sqrt(3))
    test = report.paired_t_test(INDUCED, TRANSFORMER)
    assert test["differences"] == pytest.approx(differences)
    assert (test["seeds"], test["df"]) == (3, 2)
    assert test["mean_difference"] == pytest.approx(mean) and test["sd"] == pytest.approx(sd)
    assert test["t"] == pytest.approx(t) and t == pytest.approx(2.2709, abs=1e-4)
    assert test["p_value"] == pytest.approx(1 - t / math.sqrt(t * t + 2))
    assert test["p_value"] == pytest.approx(0.1511, abs=1e-4)
    # the sign follows other - first; the p-value does not
    swapped = report.paired_t_test(TRANSFORMER, INDUCED)
    assert swapped["t"] == pytest.approx(-t) and swapped["p_value"] == test["p_value"]


@pytest.mark.parametrize("df, t_05, t_01", [(1, 12.706, 63.657), (2, 4.303, 9.925),
                                            (3, 3.182, 5.841), (4, 2.776, 4.604),
                                            (5, 2.571, 4.032), (10, 2.228, 3.169),
                                            (20, 2.086, 2.845)])
def test_t_p_value_matches_the_tables(df, t_05, t_01):
    """Two-sided critical values of Student's t (three decimals) give p = 0.05 and 0.01."""
    assert report.t_test_p_value(t_05, df) == pytest.approx(0.05, abs=2e-4)
    assert report.t_test_p_value(t_01, df) == pytest.approx(0.01, abs=2e-5)
    assert report.t_test_p_value(0.0, df) == pytest.approx(1.0)
    assert report.t_test_p_value(-t_05, df) == report.t_test_p_value(t_05, df)


def test_closed_forms_of_one_and_two_degrees_of_freedom():
    for t in (0.3, 1.0, 2.5, 40.0):
        assert report.t_test_p_value(t, 1) == pytest.approx(1 - 2 / math.pi * math.atan(t))
        assert report.t_test_p_value(t, 2) == pytest.approx(1 - t / math.sqrt(t * t + 2))


def test_a_difference_without_spread_has_no_p_value():
    """The same difference on every seed (exactly, or to the scores' rounding to 0.01, as the
    agreement reports' +33.34 on 3 examples: 33.33, 33.34, 33.33) is no evidence: no p-value,
    never the t-test's 0, and the table says why; one more hundredth of spread is tested."""
    for first, other in (([1.0, 2.0], [1.5, 2.5]), ([1.0, 2.0], [1.0, 2.0]),
                         ([66.67, 33.33, 66.67], [100.0, 66.67, 100.0])):
        test = report.paired_t_test(first, other)
        assert test["p_value"] is None and test["t"] is None
        assert report.difference_cell(test).endswith(f"({report.NO_SPREAD})")
    assert report.paired_t_test([1.0], [2.0])["no_test"] == "one seed"
    spread = report.paired_t_test([50.0, 50.0, 50.0], [60.0, 60.03, 60.0])
    assert 0 < spread["p_value"] < 1e-3 and report.difference_cell(spread) == "+10.01 (<0.001)"


def test_report_prints_the_tests_of_both_result_layouts(tmp_path, capsys):
    """bench/induced_translation.py's rows (per direction, against the induced-tree tree2seq) and
    bench/lib/seeds.py's runs (against the first model)."""
    rows = [{"direction": "fr-en", "pair": pair, "model": model, "seed": seed, "sacrebleu": score}
            for pair, model, scores in [("bible-fr-en-induced", "tree2seq", INDUCED),
                                        ("bible-fr-en", "transformer", TRANSFORMER)]
            for seed, score in zip((1, 2, 3), scores)]
    (tmp_path / "induced.json").write_text(json.dumps({"results": rows}))
    runs = [{"model": r["model"], "seed": r["seed"], "sacrebleu": r["sacrebleu"]}
            for r in rows[::-1]]  # the transformer first in the runs, not in the summary
    (tmp_path / "seeds.json").write_text(json.dumps(
        {"summary": [{"model": "tree2seq"}, {"model": "transformer"}], "runs": runs}))
    tests = report.main([str(tmp_path / "induced.json"), str(tmp_path / "seeds.json")])
    expected = report.paired_t_test(INDUCED, TRANSFORMER)
    assert [(t.get("direction"), t["system"], t["baseline"]) for t in tests] == [
        ("fr-en", "bible-fr-en transformer", "bible-fr-en-induced tree2seq"),
        (None, "transformer", "tree2seq")]
    for test in tests:
        assert test["seed_list"] == [1, 2, 3]
        assert test["p_value"] == pytest.approx(expected["p_value"])
    printed = capsys.readouterr().out
    assert printed.count("+0.41 +0.19 +0.96, mean +0.52, t = 2.271, df 2, p = 0.151") == 2


def test_holm_adjusts_the_p_values_of_an_agreement_report(tmp_path, capsys):
    assert report.holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    test = lambda p: {"seeds": 3, "differences": [1.0, 2.0, 3.0], "mean_difference": 2.0,
                      "sd": 1.0, "t": 3.46, "df": 2, "p_value": p}
    row = lambda p: {"seeds": [1, 2, 3], "mean": 50.0, "vs roberta": test(p)}
    summary = {"test": {"tree": {"all": row(0.01), "attractors 1": row(0.02),
                                 "attractors 4+": row(0.0)},
                        "roberta": {"all": {"seeds": [1, 2, 3], "mean": 49.0}}}}
    path = tmp_path / "agreement.json"
    path.write_text(json.dumps({"summary": summary}))
    tests = report.main(["--holm", "--skip-column", "attractors 4+", str(path)])
    assert [(t["column"], t["system"], t["baseline"], t["holm_p_value"]) for t in tests] == [
        ("all", "tree", "roberta", pytest.approx(0.02)),
        ("attractors 1", "tree", "roberta", pytest.approx(0.02))]
    assert "(2 tests)" in capsys.readouterr().out


def agreement_reports() -> list:
    reports = []
    for path in sorted((ROOT / "bench" / "results").glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        if record.get("benchmark") == "subject-verb agreement by attractors" and \
                record.get("summary"):
            reports.append(path)
    return reports


@pytest.mark.parametrize("path", agreement_reports(), ids=lambda path: path.name)
def test_committed_agreement_summaries_are_what_their_rows_give(path, tmp_path):
    """Each committed agreement report's seed summary and tests are what today's paired test
    (``bench/agreement.py --summarize``) makes of the rows it holds: a report left with an older
    test's figures (a p of 0 where every seed differed alike) fails."""
    from bench import agreement

    copy = tmp_path / path.name
    copy.write_bytes(path.read_bytes())
    agreement.summarize(copy, None, markdown=False)
    assert json.loads(copy.read_text()) == json.loads(path.read_text())


def agreement_blocks() -> list:
    """bench/RESULTS.md's tables written by the agreement benchmarks' renderers (bench.agreement,
    bench.agreement_targeted, bench.contrastive, and bench.sentiment's runs table)."""
    from bench.lib import tables

    lines = tables.RESULTS.read_text(encoding="utf-8").split("\n")
    return [block for block in tables.read_blocks(tables.RESULTS, lines)
            if block.function.startswith(("bench.agreement", "bench.contrastive",
                                          "bench.sentiment.runs_table"))]


def test_the_agreement_tables_of_results_are_written_from_their_json():
    """Every agreement and contrastive table of bench/RESULTS.md is what its renderer writes
    from the committed JSON (``bench.lib.tables``): a cell edited by hand fails here."""
    from bench.lib import tables

    blocks = agreement_blocks()
    assert any(b.function == "bench.contrastive.markdown_lines" for b in blocks)
    assert any(b.function == "bench.agreement.attractor_table" for b in blocks)
    for block in blocks:
        assert tables.render(block, tables.RESULTS) == block.lines, (block.function, block.json)


def test_a_difference_without_spread_stays_out_of_the_agreement_tables_holm_family():
    """The agreement tables give a difference the same on every seed no p and keep it out of
    Holm's family: the report's family is the tests with a p-value."""
    from bench import agreement

    path = ROOT / "bench" / "results" / "agreement-flat-test.json"
    stored = json.loads(path.read_text(encoding="utf-8"))
    table = "\n".join(agreement.attractor_table(stored, references=False))
    assert "Holm over the report's 20 tests" in table
    assert "+0.00 (the same difference on every seed: no spread to test)" in table


def test_lowercase_i_subjects_are_a_row_of_their_own_where_a_split_has_them(tmp_path):
    """Informal text's first person, "i", is reported apart from the other pronoun subjects
    (its word read from the recipe's text/ at the .meta's subject position); a split without
    one has no such row, so reports of edited text keep their rows."""
    from bench import agreement

    meta = [{"subject_kind": kind, "attractors": "0", "subject": position}
            for kind, position in (("pronoun", "0"), ("pronoun", "1"), ("noun", "1"),
                                   ("pronoun", "0"))]
    (tmp_path / "text").mkdir()
    (tmp_path / "text" / "test1.tok").write_text("i think\nso i\nthe dog\nI\n")
    subjects = agreement.subject_words(tmp_path, "test1", meta)
    assert subjects == ["i", "i", "dog", "I"]
    rows = agreement.breakdown(["1", "0", "0", "1"], ["1", "1", "0", "1"], meta, subjects)
    assert rows[agreement.LOWERCASE_I] == {"accuracy": 50.0, "count": 2}
    assert rows["pronoun subjects"] == {"accuracy": 66.67, "count": 3}
    edited = agreement.breakdown(["1"], ["1"], meta[3:], subjects[3:])
    assert agreement.LOWERCASE_I not in edited
    assert agreement.subject_words(tmp_path, "test", meta) is None
    with pytest.raises(SystemExit, match=r"test1.tok: 4 lines, but the split has 3 examples"):
        agreement.subject_words(tmp_path, "test1", meta[:3])


def test_noun_subjects_by_the_number_of_the_nearest_present_tense_verb(tmp_path):
    """--by-nearest-verb: the noun subjects whose nearest present-tense verb in the parsed
    prefix has the label's number, and those whose has the other (where copying it is wrong);
    a noun subject without such a verb is in neither, a pronoun subject never."""
    from bench import agreement

    (tmp_path / "trees").mkdir()
    (tmp_path / "trees" / "test.conllu").write_text(
        "# text = you know that no murderer\n"
        "1\tyou\t_\tPRON\tPRP\t_\t2\tnsubj\t_\t_\n2\tknow\t_\tVERB\tVBP\t_\t0\troot\t_\t_\n"
        "3\tthat\t_\tSCONJ\tIN\t_\t5\tmark\t_\t_\n4\tno\t_\tDET\tDT\t_\t5\tdet\t_\t_\n"
        "5\tmurderer\t_\tNOUN\tNN\t_\t2\tccomp\t_\t_\n\n"
        "1\tthe\t_\tDET\tDT\t_\t2\tdet\t_\t_\n2\twidow\t_\tNOUN\tNN\t_\t3\tnsubj\t_\t_\n"
        "3\tknows\t_\tVERB\tVBZ\t_\t0\troot\t_\t_\n4\tand\t_\tCCONJ\tCC\t_\t3\tcc\t_\t_\n\n"
        "1\tthe\t_\tDET\tDT\t_\t2\tdet\t_\t_\n2\tdog\t_\tNOUN\tNN\t_\t0\troot\t_\t_\n\n"
        "1\tthey\t_\tPRON\tPRP\t_\t2\tnsubj\t_\t_\n2\tsay\t_\tVERB\tVBP\t_\t0\troot\t_\t_\n"
        "3\the\t_\tPRON\tPRP\t_\t2\tnsubj\t_\t_\n\n")
    nearest = agreement.nearest_verb_numbers(tmp_path, "test", 4)
    assert nearest == ["1", "0", None, "1"]
    meta = [{"subject_kind": kind, "attractors": "0", "subject": "0"}
            for kind in ("noun", "noun", "noun", "pronoun")]
    rows = agreement.breakdown(["1", "0", "0", "0"], ["0", "0", "0", "0"], meta, None, nearest)
    assert rows["nearest verb of the other number"] == {"accuracy": 0.0, "count": 1}
    assert rows["nearest verb of the same number"] == {"accuracy": 100.0, "count": 1}
    assert rows["noun subjects"]["count"] == 3
    assert "nearest verb of the other number" not in agreement.breakdown(
        ["0"], ["0"], meta[:1])
    with pytest.raises(SystemExit, match=r"test.conllu: 4 sentences, but the split has 3"):
        agreement.nearest_verb_numbers(tmp_path, "test", 3)


def test_the_examples_table_counts_made_past_tense_and_contrast_examples_only_where_made():
    from bench import agreement

    def split(examples, made=None):
        row = {"examples": examples, "noun subjects": 2, "pronoun subjects": examples - 2,
               "noun subjects by class": {"singular (VBZ)": 1, "plural (VBP)": 1},
               "noun subjects by attractors": {"0": 1, "1": 1}}
        return {**row, "coordinations made": made} if made is not None else row

    made = agreement.examples_table({"stats": {"train": split(12, 4), "valid": split(3)}},
                                    ["train", "valid"])
    assert made[0].endswith("| of them made coordinations |")
    assert made[2:] == ["| train | 12 | 2 (1 / 1) | 10 | 1 / 1 | 4 |",
                        "| valid | 3 | 2 (1 / 1) | 1 | 1 / 1 | 0 |"]
    plain = agreement.examples_table({"stats": {"train": split(12)}}, ["train"])
    assert "made" not in plain[0] and plain[2] == "| train | 12 | 2 (1 / 1) | 10 | 1 / 1 |"
    past = agreement.examples_table({"stats": {"train": {**split(12), "past-tense examples": 5},
                                               "valid": split(3)}}, ["train", "valid"])
    assert past[0].endswith("| noun subjects by attractors 0 / 1 | of them past-tense |")
    assert past[2:] == ["| train | 12 | 2 (1 / 1) | 10 | 1 / 1 | 5 |",
                        "| valid | 3 | 2 (1 / 1) | 1 | 1 / 1 | 0 |"]
    both = agreement.examples_table(
        {"stats": {"train": {**split(12, 4), "contrast copies": 3}}}, ["train"])
    assert both[0].endswith("| of them made coordinations | of them contrast copies |")
    assert both[2] == "| train | 12 | 2 (1 / 1) | 10 | 1 / 1 | 4 | 3 |"


def markdown_rows(lines: list[str]) -> list[dict]:
    """The rows of a Markdown table (its first, from ``lines[0]``) as dicts by header."""
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = []
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")))))
    return rows


def test_the_recipes_table_gives_the_cells_of_the_effect_and_targeted_tables():
    """bench.agreement.recipes_table, a row a recipe: the defaults' mean ± sd, each recipe's
    difference (p) from its report's baseline and its targeted accuracies are the cells that
    attractor_table and targeted_table write from the same JSONs; a report that tests or holds
    several models needs its #MODEL."""
    from bench import agreement, agreement_targeted

    def load(name):
        return json.loads((ROOT / "bench" / "results" / name).read_text(encoding="utf-8"))

    effect = "agreement-coordination-main-effect.json"
    items = "agreement-coordination-main-targeted.json"
    roberta = "agreement-coordination-main-roberta-effect.json"
    rows = markdown_rows(agreement.recipes_table(
        load("agreement-case.json"), "bench/results/agreement-case-targeted.json",
        f"bench/results/{effect}|bench/results/{items}#rta,"
        f"bench/results/{roberta}|bench/results/{items}#roberta"))
    assert [row["recipe or head (model on ...)"] for row in rows] == [
        "Recursive Tree Attention on the defaults", "roberta (leaves) on the defaults",
        "Recursive Tree Attention on lowercased leaves and main-clause coordinations",
        "roberta (leaves) on lowercased leaves and main-clause coordinations"]
    defaults = markdown_rows(agreement.attractor_table(load("agreement-case.json"), "test"))
    assert rows[0]["Bible test: noun subjects (2,488)"] == defaults[0]["noun subjects (2,488)"]
    assert rows[1]["Bible test: noun subjects (2,488)"] == defaults[1]["noun subjects (2,488)"]
    for split, row, column in (("valid", "noun subjects", "valid: noun subjects (2,508)"),
                               ("test", "noun subjects", "Bible test: noun subjects (2,488)"),
                               ("test", "attractors 1", "Bible test: one attractor (134)"),
                               ("test2", "noun subjects", "tweets: noun subjects (863)")):
        for recipe, name in ((rows[2], effect), (rows[3], roberta)):
            lines = agreement.attractor_table(load(name), split, references=False,
                                              holm_family=False)
            tested = markdown_rows(lines[lines.index("") + 1:])
            assert [recipe[column]] == [cell for key, cell in tested[0].items()
                                        if key.startswith(f"{row} (")], (name, split, row)
    assert rows[2]["valid: noun subjects (2,508)"] == "-0.67 (0.11)"
    targeted = {row["condition"]: row for row in markdown_rows(
        agreement_targeted.targeted_table(load(items)))}
    condition = "vp-coordination + attractor"
    rta, roberta_cell = (targeted[condition][f"{name} (3 seeds)"]
                         for name in ("Recursive Tree Attention", "roberta (leaves)"))
    assert rows[2][f"targeted: {condition}"] == rta
    assert rows[3][f"targeted: {condition}"] == roberta_cell
    assert rows[0][f"targeted: {condition}"] == "41.45 ± 7.34"
    assert [row["against"] for row in rows[2:]] == [
        "Recursive Tree Attention on lowercased leaves", "roberta (leaves) on lowercased leaves"]
    with pytest.raises(ValueError, match=r"#MODEL"):
        agreement.recipes_table(load("agreement-case.json"),
                                "bench/results/agreement-case-targeted.json",
                                f"bench/results/{effect}|bench/results/{items}")
