"""fairseq-tree-bpe: learning joint subword models on tree leaves + text, and applying them."""

import pytest

from conftest import BIBLE, write_lines
from fairseq_tree.cli.bpe import cli_main
from fairseq_tree.trees.normal_form import parse_tree
from fairseq_tree.trees.subwords import WORD_LABEL, join_subwords

METHODS = {
    "subword-nmt": (["--symbols", "300"], lambda out: ["--codes", str(out)]),
    "sentencepiece": (["--symbols", "400"], lambda out: ["--sentencepiece-model", f"{out}.model"]),
}


@pytest.fixture(scope="module")
def corpus():
    trees = (BIBLE / "train.en").read_text(encoding="utf-8").splitlines()
    return trees, BIBLE / "train.en", BIBLE / "train.fr"


@pytest.mark.parametrize("method", sorted(METHODS))
def test_learn_and_apply_round_trip(method, corpus, tmp_path):
    trees, tree_file, text_file = corpus
    learn_args, model_args = METHODS[method]
    model = tmp_path / "model"
    cli_main(["learn", "--method", method, *learn_args, "--trees", str(tree_file),
              "--text", str(text_file), "--output", str(model)])
    out = tmp_path / "train.bpe.en"
    cli_main(["apply", *model_args(model), "--input", str(tree_file), "--output", str(out)])

    bpe_lines = out.read_text(encoding="utf-8").splitlines()
    assert len(bpe_lines) == len(trees)
    split_words = 0
    for original, segmented in zip(trees, bpe_lines):
        before, after = parse_tree(original), parse_tree(segmented)
        assert join_subwords(after.leaves, method) == before.leaves
        split_words += sum(1 for n in after.nodes if n.label == WORD_LABEL or n.label in before.tags)
    assert split_words > 0, "a small model must split some words"

    # The joint model also segments the French side, and that too joins back.
    text_out = tmp_path / "train.bpe.fr"
    cli_main(["apply", *model_args(model), "--text", "--input", str(text_file), "--output", str(text_out)])
    for original, segmented in zip(text_file.read_text(encoding="utf-8").splitlines(),
                                   text_out.read_text(encoding="utf-8").splitlines()):
        assert join_subwords(segmented.split(), method) == original.split()


def test_split_word_node_carries_the_pos_tag(tmp_path):
    codes = write_lines(tmp_path / "codes", ["#version: 0.2", "a n</w>", "r an</w>", "e l", "el e", "ele p"])
    trees = write_lines(tmp_path / "in.en", ["(ROOT (S (NP (DT an) (NN elephant)) (VP (VBD ran))))"])
    out = tmp_path / "out.en"
    cli_main(["apply", "--codes", str(codes), "--input", str(trees), "--output", str(out)])
    tree = parse_tree(out.read_text(encoding="utf-8"))
    assert tree.leaves[0] == "an" and len(tree.leaves) > 3
    assert ("NN", 1, len(tree.leaves) - 1) in {(n.label, n.start, n.end) for n in tree.nodes}


def test_malformed_line_names_file_and_line_and_leaves_no_output(tmp_path, capsys):
    codes = write_lines(tmp_path / "codes", ["#version: 0.2", "a b"])
    trees = write_lines(tmp_path / "in.en", ["(S (NP a) (VP b))", "(S (NP a) (VP b)", "(S c)"])
    out = tmp_path / "out.en"
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["apply", "--codes", str(codes), "--input", str(trees), "--output", str(out)])
    assert str(exit_info.value) == (
        f"fairseq-tree-bpe: error: {trees}:2: malformed tree: unbalanced brackets: 1 '(' never closed"
    )
    assert not out.exists() and not (tmp_path / "out.en.partial").exists()

    cli_main(["apply", "--codes", str(codes), "--input", str(trees), "--output", str(out),
              "--skip-invalid"])
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[1] == "(S (NP a) (VP b)" and len(lines) == 3
    assert "1 malformed lines copied unchanged" in capsys.readouterr().err


def test_empty_line_is_malformed(tmp_path):
    codes = write_lines(tmp_path / "codes", ["#version: 0.2", "a b"])
    trees = write_lines(tmp_path / "in.en", ["(S a b)", ""])
    with pytest.raises(SystemExit, match=r"in.en:2: empty line"):
        cli_main(["apply", "--codes", str(codes), "--input", str(trees), "--output", str(tmp_path / "o")])
