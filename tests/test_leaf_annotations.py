"""fairseq-tree-preprocess --leaf-tags and --dependency-heads: the optional per-leaf datasets of
the recursive encoders, their alignment with the trees, and their one-line errors."""

import filecmp
from pathlib import Path

import pytest
from fairseq.data import Dictionary

from conftest import TREES, run_cli, write_lines
from fairseq_tree.data.binarize import InputError, PairFiles, source_leaves
from fairseq_tree.data.dependency_heads import (
    aligned_heads,
    read_conllu,
    subword_conllu,
    write_dependency_heads,
)
from fairseq_tree.data.label_dictionary import label_symbol
from fairseq_tree.trees.normal_form import parse_tree
from test_preprocess import load, output_files, preprocess


def heads_of(n: int, deep: bool) -> list:
    """1-based CoNLL-U heads: a chain (word k under word k - 1) or all under word 1."""
    return [0] + [k if deep else 1 for k in range(1, n)]


def conllu(sentences) -> str:
    """CoNLL-U text for (forms, 1-based heads) pairs, with a comment, a multiword range and an
    escaped bracket to skip or unescape."""
    blocks = []
    for number, (forms, heads) in enumerate(sentences):
        lines = [f"# sent_id = {number}"]
        for k, (form, head) in enumerate(zip(forms, heads), start=1):
            if k == 2:
                lines.append(f"{k}-{k + 1}\tmw\t_\t_\t_\t_\t_\t_\t_\t_")
            form = {"(": "-LRB-", ")": "-RRB-"}.get(form, form)
            lines.append(f"{k}\t{form}\t_\tX\t_\t_\t{head}\tdep\t_\t_")
        blocks.append("\n".join(lines) + "\n\n")
    return "".join(blocks)


def write_conllu(raw: Path, split: str, trees, deep=False) -> list:
    """Write ``{split}.conllu`` for ``trees``; return the expected 0-based heads per tree."""
    sentences = [(parse_tree(t).leaves, heads_of(len(parse_tree(t).leaves), deep)) for t in trees]
    (raw / f"{split}.conllu").write_text(conllu(sentences), encoding="utf-8")
    return [[h - 1 for h in heads] for _, heads in sentences]


def write_all_conllu(raw: Path) -> list:
    expected = write_conllu(raw, "train", TREES * 3, deep=True)
    for split in ("valid", "test"):
        write_conllu(raw, split, TREES)
    return expected


def same_outputs(one: Path, two: Path, extra=()):
    names = [n for n in output_files(one) if n != "preprocess.log"]
    assert [n for n in output_files(two) if n != "preprocess.log"] == sorted(names + list(extra))
    for name in names:
        assert filecmp.cmp(one / name, two / name, shallow=False), name


@pytest.mark.slow
def test_heads_and_tags_are_written_per_leaf_and_change_nothing_else(tree_corpus, tmp_path):
    expected_heads = write_all_conllu(tree_corpus)
    both, plain = tmp_path / "both", tmp_path / "plain"
    proc = preprocess(tree_corpus, both, "--dependency-heads", "conllu", "--leaf-tags")
    assert load(both, "train.en-fr.en.heads") == expected_heads
    assert load(both, "test.en-fr.en.heads")[0] == [-1, 0, 0]
    assert "train: dependency heads of 18 trees" in proc.stdout

    d = Dictionary.load(str(both / "dict.en.txt"))
    assert "[DT]" in d.indices  # a tag only, never a node label of these trees
    tags = load(both, "train.en-fr.en.tags")
    for tree_line, item in zip(TREES * 3, tags):
        tree = parse_tree(tree_line)
        tag_symbols = [label_symbol(tag) if tag else d.pad_word for tag in tree.tags]
        assert [d[t] for t in item] == tag_symbols + [d.pad_word]
    assert [d[t] for t in tags[1][:3]] == [d.pad_word] * 3  # bare link-grammar tokens

    # With the same dictionaries and no option, every other file is the same, byte for byte.
    preprocess(tree_corpus, plain, "--srcdict", both / "dict.en.txt", "--tgtdict",
               both / "dict.fr.txt")
    extra = [f"{split}.en-fr.en.{kind}.{ext}" for split in ("test", "train", "valid")
             for kind in ("heads", "tags") for ext in ("bin", "idx")]
    same_outputs(plain, both, extra=extra)


def test_skipped_lines_drop_their_conllu_sentence(tree_corpus, tmp_path):
    trees = TREES * 3
    expected = write_all_conllu(tree_corpus)
    trees[4] = "(S (NP the dog)) (VP"
    write_lines(tree_corpus / "train.en", trees)
    dest = tmp_path / "bin"
    preprocess(tree_corpus, dest, "--skip-invalid", "--dependency-heads", "conllu")
    assert load(dest, "train.en-fr.en.heads") == expected[:4] + expected[5:]


def write_bad_conllu(raw: Path, damage) -> Path:
    """The training CoNLL-U with ``damage(lines)`` applied to its lines."""
    write_all_conllu(raw)
    path = raw / "train.conllu"
    lines = path.read_text(encoding="utf-8").split("\n")
    damage(lines)
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def set_field(lines, lineno, column, value):
    fields = lines[lineno - 1].split("\t")
    fields[column] = value
    lines[lineno - 1] = "\t".join(fields)


# Line 1 is a comment, line 2 token 1, line 3 the multiword range, line 4 token 2 ("dog").
BAD_CONLLU = {
    "token differs": (lambda lines: set_field(lines, 4, 1, "cat"),
                      ":4: token 2 'cat' differs from leaf 2 'dog' of the tree at {trees}:1"),
    "missing head": (lambda lines: set_field(lines, 4, 6, "_"), ":4: missing or invalid HEAD '_'"),
    "head out of range": (lambda lines: set_field(lines, 4, 6, "7"),
                          ":4: HEAD 7 is beyond the sentence's 3 tokens"),
    "two roots": (lambda lines: set_field(lines, 4, 6, "0"), ":2: sentence has 2 roots"),
    "cycle": (lambda lines: set_field(lines, 4, 6, "2"), ":4: HEAD makes a cycle"),
    "fields": (lambda lines: set_field(lines, 4, 9, "_\textra"), ":4: expected 10 tab-separated"),
    "token id": (lambda lines: set_field(lines, 4, 0, "3"), ":4: token ID '3' where 2 was"),
    "fewer sentences": (lambda lines: lines.__delitem__(slice(-4, None)),
                        ": has no sentence for the tree at {trees}:18"),
    "more sentences": (lambda lines: lines.extend(["1\tx\t_\t_\t_\t_\t0\t_\t_\t_", ""]),
                       ":125: has more sentences than the tree file lines"),
    "tokens vs leaves": (lambda lines: lines.__delitem__(4), ":2: sentence has 2 tokens but the "
                         "tree at {trees}:1 has 3 leaves"),
}


@pytest.mark.parametrize("damage, message", BAD_CONLLU.values(), ids=BAD_CONLLU.keys())
def test_bad_conllu_is_an_error_naming_file_and_line(tree_corpus, tmp_path, damage, message):
    path = write_bad_conllu(tree_corpus, damage)
    files = PairFiles(str(tree_corpus / "train.en"), str(tree_corpus / "train.fr"))
    with pytest.raises(InputError) as error:
        write_dependency_heads(str(path), source_leaves(files, set()), str(tmp_path / "x"))
    assert str(error.value).startswith(f"{path}{message.format(trees=files.src)}")


def test_preprocess_stops_on_bad_conllu_with_one_line(tree_corpus, tmp_path):
    damage, message = BAD_CONLLU["token differs"]
    path = write_bad_conllu(tree_corpus, damage)
    dest = tmp_path / "bin"
    proc = preprocess(tree_corpus, dest, "--dependency-heads", "conllu", check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    error = f"{path}{message.format(trees=tree_corpus / 'train.en')}"
    (line,) = [line for line in proc.stderr.splitlines() if "error" in line]
    assert line.startswith(f"fairseq-tree-preprocess: error: {error}")
    assert output_files(dest) == []


def test_missing_conllu_file_is_named(tree_corpus, tmp_path):
    from fairseq_tree.cli.preprocess import cli_main

    with pytest.raises(SystemExit) as stop:
        cli_main(["-s", "en", "-t", "fr", "--trainpref", str(tree_corpus / "train"),
                  "--destdir", str(tmp_path / "bin"), "--dependency-heads", "conllu"])
    assert str(stop.value.code) == (
        f"fairseq-tree-preprocess: error: {tree_corpus / 'train.conllu'}: no such file")


def test_conllu_reader_keeps_word_tokens_only(tmp_path):
    path = tmp_path / "x.conllu"
    text = conllu([(["a", "(", "b"], [2, 0, 2])])  # a multiword range before token 2
    empty_node = "2.1\tgap\t_\t_\t_\t_\t_\t_\t_\t_\n"
    path.write_text(text.replace("\n3\t", "\n" + empty_node + "3\t"), encoding="utf-8")
    (sentence,) = read_conllu(str(path))
    assert sentence.forms == ["a", "-LRB-", "b"] and sentence.heads == [1, -1, 1]
    assert aligned_heads(sentence, ["a", "(", "b"], str(path), "t:1") == [1, -1, 1]


@pytest.mark.slow
def test_only_source_names_tags_and_heads_as_fairseq_preprocess_does(tree_corpus, tmp_path):
    """``--only-source`` without a language: ``{split}.tags`` and ``{split}.heads`` beside
    ``{split}``; with ``--source-lang en``: ``{split}.en-None.en.*`` as fairseq names them."""
    expected_heads = write_all_conllu(tree_corpus)
    for split in ("train", "valid", "test"):
        (tree_corpus / split).write_bytes((tree_corpus / f"{split}.en").read_bytes())
    dest = tmp_path / "input0"
    run_cli("fairseq-tree-preprocess", "--only-source", "--trainpref", tree_corpus / "train",
            "--validpref", tree_corpus / "valid", "--destdir", dest, "--leaf-tags",
            "--dependency-heads", "conllu")
    assert load(dest, "train.heads") == expected_heads
    d = Dictionary.load(str(dest / "dict.txt"))
    first = parse_tree(TREES[0])
    assert [d[t] for t in load(dest, "train.tags")[0]] == [
        label_symbol(tag) for tag in first.tags] + [d.pad_word]
    assert {"valid.tags.bin", "valid.heads.idx"} <= set(output_files(dest))

    with_lang = tmp_path / "with-lang"
    run_cli("fairseq-tree-preprocess", "--only-source", "--source-lang", "en", "--trainpref",
            tree_corpus / "train", "--destdir", with_lang, "--leaf-tags",
            "--dependency-heads", "conllu")
    assert load(with_lang, "train.en-None.en.heads") == expected_heads
    assert load(with_lang, "train.en-None.en.tags") == load(dest, "train.tags")


def test_leaf_tags_refused_with_node_targets(tree_corpus, tmp_path):
    classes = write_lines(tmp_path / "classes.txt", ["0 1", "1 1"])
    proc = run_cli("fairseq-tree-preprocess", "--only-source", "--trainpref",
                   tree_corpus / "train.en", "--destdir", tmp_path / "bin", "--leaf-tags",
                   "--node-targets", classes, check=False)
    assert proc.returncode == 2 and "--leaf-tags with --node-targets" in proc.stderr


WORD_SENTENCE = ("1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n"
                 "2\teditors\teditor\tNOUN\tNNS\t_\t4\tnsubj\t_\t_\n"
                 "3\t-LRB-\t(\tPUNCT\t-LRB-\t_\t2\tpunct\t_\t_\n"
                 "4\tsmile\tsmile\tVERB\tVBP\t_\t0\tROOT\t_\t_\n")


def test_subword_conllu_hangs_a_words_pieces_under_its_last_piece(tmp_path):
    """A word's last piece takes the word's head (the last piece of the head word) and its
    columns; its other pieces depend on it. The heads written for the BPE'd tree are then
    those of the word-level parse, moved to last pieces."""
    pieces = ["The", "edit@@", "or@@", "s", "(", "sm@@", "ile"]
    rows = [line.split("\t") for line in subword_conllu(WORD_SENTENCE, pieces).splitlines()]
    assert [row[1] for row in rows] == pieces
    assert [int(row[6]) for row in rows] == [4, 4, 4, 7, 4, 7, 0]
    assert [row[7] for row in rows] == ["det", "subword", "subword", "nsubj", "punct", "subword",
                                        "ROOT"]
    assert rows[3][2:6] == ["editor", "NOUN", "NNS", "_"] and rows[1][2:6] == ["_"] * 4
    tree = "(S (NP (DT The) (NNS (WORD edit@@ or@@ s)) (-LRB- -LRB-)) (VP (WORD sm@@ ile)))"
    conllu = tmp_path / "pieces.conllu"
    conllu.write_text(subword_conllu(WORD_SENTENCE, pieces) + "\n", encoding="utf-8")
    (sentence,) = read_conllu(str(conllu))
    assert aligned_heads(sentence, parse_tree(tree).leaves, str(conllu), "tree:1") == [
        3, 3, 3, 6, 3, 6, -1]


@pytest.mark.parametrize("pieces,message", [
    (["The", "editors", "smile"], "3 pieces make 3 words, the sentence has 4"),
    (["The", "edit@@", "ors", "(", "sm@@"], "continues a word that never ends"),
    (["The", "edit@@", "or", "(", "smile"], "do not spell the word 'editors'"),
])
def test_subword_conllu_refuses_pieces_of_other_words(pieces, message):
    with pytest.raises(ValueError, match=message):
        subword_conllu(WORD_SENTENCE, pieces)
