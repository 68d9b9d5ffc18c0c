"""fairseq-tree-translate (raw text -> tokens -> tree -> BPE -> beam search -> text) on the tiny tree2seq model trained on the Bible sample: it must give
what fairseq-generate gives on the binarized test set, from trees and from raw text."""

import re

import pytest
from sacremoses import MosesDetokenizer

from conftest import BIBLE, run_cli, write_lines
from conftest import generated_hypotheses as generated
from fairseq_tree.trees.normal_form import parse_tree

pytestmark = pytest.mark.slow  # every test here runs a recipe or trains

TEST_TREES = (BIBLE / "test.en").read_text(encoding="utf-8").splitlines()


def translate(trained, input_path, *args):
    data, checkpoint, _ = trained
    return run_cli("fairseq-tree-translate", data, "--path", checkpoint, "-s", "en", "-t", "fr",
                   "--bpe-codes", data.parent / "bpe" / "codes", "--input", input_path,
                   "--beam", "5", *args)


def test_translating_trees_equals_fairseq_generate(trained, tmp_path):
    """Bracketed input (--trees), BPE applied per leaf on the fly: the same hypotheses as
    fairseq-generate on the binarized test set, whatever the chunking."""
    expected = generated(trained)
    trees = write_lines(tmp_path / "test.en", TEST_TREES)
    for batch_size in ("40", "7"):
        proc = translate(trained, trees, "--trees", "--no-detokenize",
                         "--batch-size", batch_size)
        assert proc.stdout.splitlines() == expected
    assert f"{len(TEST_TREES)} lines, 0 empty, 0 not translated" in proc.stderr


def test_raw_lines_keep_alignment(trained, tmp_path):
    """Empty lines and sentences longer than the model accepts give empty output lines (with a
    warning naming the line), never a shifted output."""
    words = [" ".join(parse_tree(tree).leaves) for tree in TEST_TREES[:3]]
    lines = [words[0], "", words[1], " ".join(["word"] * 2000), words[2]]
    raw = write_lines(tmp_path / "raw.en", lines)
    proc = translate(trained, raw, "--parser", "flat", "--tokenize", "none")
    out = proc.stdout.splitlines()
    assert len(out) == 5 and out[1] == "" and out[3] == ""
    assert all(out[i] for i in (0, 2, 4))
    assert re.search(rf"{re.escape(str(raw))}:4: \d+ source tokens .* exceed", proc.stderr)
    assert "5 lines, 1 empty, 1 not translated" in proc.stderr


def test_raw_text_through_link_grammar(trained, tmp_path, needs_link_grammar):
    """Raw English parsed on the fly by link-grammar gives the committed sample's trees (made by
    the same parser), hence fairseq-generate's translations, detokenised by Moses."""
    expected = generated(trained)
    detok = MosesDetokenizer(lang="fr")
    words = [" ".join(parse_tree(tree).leaves) for tree in TEST_TREES]
    raw = write_lines(tmp_path / "raw.en", words)
    proc = translate(trained, raw, "--parser", "link-grammar", "--tokenize", "none")
    assert proc.stdout.splitlines() == [detok.detokenize(h.split()) for h in expected]
    assert "0 parsed as flat fallback trees" in proc.stderr
