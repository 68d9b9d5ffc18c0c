"""Smoke runs of the Tree Transformer benchmarks at toy sizes: bench/induction.py (induced-tree F1
and masked-word perplexity) and bench/induced_translation.py (the French induced-tree recipe on a
stand-in Bible, then tree2seq on induced trees vs flat trees vs the Transformer)."""

import json
import re
import sys

from conftest import ROOT

from fairseq_tree.trees import parse_tree

sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests" / "data" / "recipes")]
import induced_translation  # noqa: E402
import induction  # noqa: E402
import standins  # noqa: E402

TINY_LM = ["--encoder-layers", "4", "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64"]


def test_induction_benchmark_scores_trees_and_perplexity(tmp_path, capsys):
    report = induction.main(["--synthetic-train", "200", "--valid", "20", "--test", "20",
                             "--bible-train", "300", "--bpe-merges", "200", "--max-update", "3",
                             "--seeds", "1", "--work", str(tmp_path / "work"), "--json",
                             str(tmp_path / "r.json"), "--", *TINY_LM])
    assert json.loads((tmp_path / "r.json").read_text())["results"] == report["results"]
    rows = report["results"]
    assert [(r["corpus"], r["arch"]) for r in rows] == [
        ("synthetic", "constituent_transformer_tiny"), ("bible", "constituent_transformer_tiny"),
        ("bible", "plain_transformer_mlm_tiny")]
    for row in rows:
        assert row["updates"] == 3
    for row in rows[:2]:
        parsing = row["parsing"]
        assert parsing["sentences"] == 20 and 0 <= parsing["pred_scores"]["sentence_f1"] <= 100
        assert parsing["right_branching"]["sentence_f1"] > parsing["left_branching"]["sentence_f1"]
    gold = (tmp_path / "work" / "data" / "bible" / "test.gold").read_text().splitlines()
    assert len(gold) == 20 and not any(tree.startswith("(ROOT ") for tree in gold)
    constituent, plain = rows[1:]
    assert constituent["masked_words"]["masked_words"] == plain["masked_words"]["masked_words"] > 0
    assert constituent["parameters"] - plain["parameters"] == 4 * (2 * (32 * 32 + 32) + 2 * 32)
    assert all(r["masked_words"]["perplexity"] > 1 for r in rows[1:])
    printed = capsys.readouterr().out
    assert "right-branching" in printed and "plain_transformer_mlm_tiny" in printed


def test_french_induced_tree_recipe_and_translation(tmp_path, monkeypatch):
    standin = standins.bible(tmp_path / "standin")
    for key, value in {"BIBLE_DIR": str(standin["wheel"].parent), "BIBLE_SOURCE_TOKENS": "1:25",
                       "BPE_MERGES": "300", "WORKERS": "1", "FAIRSEQ_TREE_VENV": sys.prefix,
                       "PYTHONWARNINGS": "ignore"}.items():
        monkeypatch.setenv(key, value)
    data, work = tmp_path / "data", tmp_path / "work"
    report = induced_translation.main([
        "--directions", "fr-en", "--seeds", "1", "--base-models",
        "--lm-max-update", "3", "--bpe-merges", "100",
        *(f"--lm-arg={arg}" for arg in TINY_LM), "--data", str(data), "--work", str(work),
        "--generate-arg=--max-len-b=4", "--json", str(tmp_path / "r.json"), "--",
        "--max-update", "2"])
    rows = report["results"]
    # (compare.py on the flat-tree pair is the same call, tested by the other benchmarks)
    assert [(r["pair"], r["model"]) for r in rows] == [("bible-fr-en-induced", "tree2seq")]
    assert all(r["updates"] == 2 and r["test_sentences"] == 7 for r in rows)
    flat = data / "bible-fr-en"
    induced = work / "fr-en" / "seed1" / "data" / "bible-fr-en-induced"
    assert json.loads((induced / "recipe.json").read_text())["parser"] == "induced"
    for split in ("train", "valid", "test"):
        tokens = (flat / "tok" / f"{split}.fr").read_text().splitlines()
        assert (induced / "tok" / f"{split}.fr").read_text().splitlines() == tokens
        assert (induced / "tok" / f"{split}.en").read_text() == (
            flat / "tok" / f"{split}.en").read_text()
        trees = (induced / "trees" / f"{split}.fr").read_text().splitlines()
        assert [parse_tree(tree).leaves for tree in trees] == [t.split() for t in tokens]
        assert all(set(re.findall(r"\((\S+)", tree)) == {"X"} for tree in trees)
        flat_trees = (flat / "trees" / f"{split}.fr").read_text().splitlines()
        assert all(tree.startswith("(ROOT ") for tree in flat_trees)
