"""fairseq-tree-bpe: learning joint subword models on tree leaves + text, and applying them."""

import io
import itertools
import subprocess
import sys

import pytest
from conftest import BIBLE, ROOT, write_lines

from fairseq_tree.cli.bpe import cli_main
from fairseq_tree.trees.normal_form import NormalTree, parse_tree
from fairseq_tree.trees.subwords import SENTENCEPIECE_SPACE, WORD_LABEL, join_subwords

# Per method: flags to learn a tiny model, and flags to apply the model learnt at PATH.
METHODS = {
    "subword-nmt": (["--symbols", "50"], lambda out: ["--codes", str(out)]),
    "sentencepiece": (["--symbols", "90"], lambda out: ["--sentencepiece-model", f"{out}.model"]),
}

SUBJECTS = [  # (tree of the subject, its French words): tagged, bare link-grammar, one-word phrases
    ("(NP (DT the) (NN elephant))", "l' éléphant"),
    ("(NP the hippopotamus.n)", "l' hippopotame"),
    ("(NP (NNP Müller))", "Müller"),
    ("(NP (DT the) (NN ﬁnalist))", "le ﬁnaliste"),
    ("(NP Straßenbahnfahrer.n)", "le conducteur"),
]
VERBS = [("(VBD swallowed)", "avala"), ("saw.v-d", "vit"), ("(VBD überholte)", "dépassa")]
OBJECTS = [
    ("(NP (DT a) (JJ green) (NN crocodile))", "un crocodile vert"),
    ("(NP the {giraffes}.n (-LRB- -LRB-) 北京大学 (-RRB- -RRB-))", "les girafes ( 北京大学 )"),
    ("(NP (NNS elephants))", "des éléphants"),
]


def made_up_corpus(directory):
    """Tree lines (PTB style and link-grammar style, escapes, unicode, one two-sentence line)
    and their aligned French lines; returns (trees file, text file)."""
    trees, texts = [], []
    for (subj, subj_fr), (verb, verb_fr), (obj, obj_fr) in itertools.product(SUBJECTS, VERBS, OBJECTS):
        trees.append(f"(ROOT (S {subj} (VP {verb} {obj}) (. .)))")
        texts.append(f"{subj_fr} {verb_fr} {obj_fr} .")
    trees.append(f"(ROOT (S {SUBJECTS[0][0]} (VP (VBD ran)))) (ROOT (S {SUBJECTS[2][0]} (VP slept.v)))")
    texts.append("l' éléphant courut . Müller dormit")
    return write_lines(directory / "train.en", trees), write_lines(directory / "train.fr", texts)


def word_spans(pieces: list[str], method: str) -> list[tuple[int, int]]:
    """The [start, end) piece span of every word, read from the subword markers alone."""
    starts = [i for i, piece in enumerate(pieces) if i == 0 or (
        not pieces[i - 1].endswith("@@") if method == "subword-nmt"
        else piece.startswith(SENTENCEPIECE_SPACE))]
    return list(zip(starts, starts[1:] + [len(pieces)]))


def check_split(before: NormalTree, after: NormalTree, method: str) -> set[str]:
    """Assert that ``after`` is ``before`` with its words split as Appendix 7.4 says; return the
    labels of the nodes added over split words."""
    assert join_subwords(after.leaves, method) == before.leaves
    words = word_spans(after.leaves, method)
    assert len(words) == len(before.leaves)
    first = [start for start, _ in words] + [len(after.leaves)]
    kept = {(n.label, first[n.start], first[n.end]) for n in before.nodes}
    added = {(n.label, n.start, n.end) for n in after.nodes} - kept
    assert kept <= {(n.label, n.start, n.end) for n in after.nodes}
    expected = set()
    for (start, end), tag in zip(words, before.tags):
        if end - start == 1:
            assert after.tags[start] == tag
            continue
        assert after.tags[start:end] == [None] * (end - start)
        if not any((s, e) == (start, end) for _, s, e in kept):  # else the phrase names the word
            expected.add((tag or WORD_LABEL, start, end))
    assert added == expected
    return {label for label, _, _ in added}


def learn_and_apply(method, tree_file, text_file, tmp_path):
    """Learn a joint model through the CLI; return (segmented trees, segmented text) lines."""
    learn_args, model_args = METHODS[method]
    model = tmp_path / f"model.{method}"
    cli_main(["learn", "--method", method, *learn_args, "--trees", str(tree_file),
              "--text", str(text_file), "--output", str(model)])
    outputs = []
    for mode, source in (([], tree_file), (["--text"], text_file)):
        out = tmp_path / f"{source.name}.{method}.bpe"
        cli_main(["apply", *model_args(model), *mode, "--input", str(source), "--output", str(out)])
        outputs.append(out.read_text(encoding="utf-8").splitlines())
    return outputs


@pytest.mark.parametrize("method", sorted(METHODS))
def test_made_up_corpus_round_trip(method, tmp_path, capsys):
    tree_file, text_file = made_up_corpus(tmp_path)
    trees, texts = (f.read_text(encoding="utf-8").splitlines() for f in (tree_file, text_file))
    bpe_trees, bpe_texts = learn_and_apply(method, tree_file, text_file, tmp_path)
    assert len(bpe_trees) == len(trees) and len(bpe_texts) == len(texts)
    labels = set()
    for original, segmented in zip(trees, bpe_trees):
        labels |= check_split(parse_tree(original), parse_tree(segmented), method)
    # Tagged words split into POS-labelled nodes, untagged link-grammar words into WORD nodes.
    assert {"NN", "JJ", WORD_LABEL} <= labels
    for original, segmented in zip(texts, bpe_texts):
        assert join_subwords(segmented.split(), method) == original.split()
    assert f"{len(texts)} lines" in capsys.readouterr().err


@pytest.mark.parametrize("method", sorted(METHODS))
def test_real_sample_round_trip(method, tmp_path):
    """The shipped link-grammar sample: real trees, real French."""
    bpe_trees, _ = learn_and_apply(method, BIBLE / "train.en", BIBLE / "train.fr", tmp_path)
    trees = (BIBLE / "train.en").read_text(encoding="utf-8").splitlines()
    assert len(bpe_trees) == len(trees)
    labels = set()
    for original, segmented in zip(trees, bpe_trees):
        labels |= check_split(parse_tree(original), parse_tree(segmented), method)
    assert WORD_LABEL in labels


def test_split_word_node_carries_the_pos_tag(tmp_path):
    codes = write_lines(tmp_path / "codes",
                        ["#version: 0.2", "a n</w>", "r an</w>", "e l", "el e", "ele p"])
    trees = write_lines(tmp_path / "in.en", ["(ROOT (S (NP (DT an) (NN elephant)) (VP (VBD ran))))"])
    out = tmp_path / "out.en"
    cli_main(["apply", "--codes", str(codes), "--input", str(trees), "--output", str(out)])
    assert out.read_text(encoding="utf-8") == (
        "(S (NP (DT an) (NN elep@@ h@@ a@@ n@@ t)) (VP (VBD ran)))\n"
    )


def test_vocabulary_filter_reverts_merges(tmp_path):
    codes = write_lines(tmp_path / "codes", ["#version: 0.2", "e l", "el e", "ele p"])
    vocab = write_lines(tmp_path / "vocab",
                        ["elep@@ 1", "e@@ 9", "l@@ 9", "p@@ 9", "h@@ 9", "a@@ 9", "n@@ 9"])
    trees = write_lines(tmp_path / "in.en", ["(NP (NN elephant) (NN t))"])
    out = tmp_path / "out.en"
    cli_main(["apply", "--codes", str(codes), "--vocabulary", str(vocab), "--vocabulary-threshold", "2",
              "--input", str(trees), "--output", str(out)])
    # "elep@@" is seen once, under the threshold of 2: its merges are undone.
    assert parse_tree(out.read_text(encoding="utf-8")).leaves[:4] == ["e@@", "l@@", "e@@", "p@@"]


def test_malformed_line_names_file_and_line_and_leaves_no_output(tmp_path, capsys):
    codes = write_lines(tmp_path / "codes", ["#version: 0.2", "a b"])
    trees = write_lines(tmp_path / "in.en", ["(S (NP a) (VP b))", "(S (NP a) (VP b)", "(S c)"])
    out = tmp_path / "out.en"
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["apply", "--codes", str(codes), "--input", str(trees), "--output", str(out)])
    assert str(exit_info.value) == (
        f"fairseq-tree-bpe: error: {trees}:2: malformed tree: unbalanced brackets: 1 unclosed '('"
    )
    assert not out.exists() and not (tmp_path / "out.en.partial").exists()


def test_skip_invalid_copies_bad_lines_and_keeps_alignment(tmp_path, capsys):
    codes = write_lines(tmp_path / "codes", ["#version: 0.2", "a b"])
    trees = tmp_path / "in.en"
    trees.write_bytes(b"(S (NP a) (VP b))\n(S (NP a) (VP b)\n\n(S \xff c)\n(S c)\n")
    out = tmp_path / "out.en"
    # Text lines may be empty or anything else, but must be UTF-8.
    with pytest.raises(SystemExit, match=r"in.en:4: not valid UTF-8 \(invalid start byte at byte 3\)"):
        cli_main(["apply", "--codes", str(codes), "--text", "--input", str(trees),
                  "--output", str(out)])
    cli_main(["apply", "--codes", str(codes), "--input", str(trees), "--output", str(out),
              "--skip-invalid"])
    assert out.read_bytes().split(b"\n") == [
        b"(S (NP a) (VP b))", b"(S (NP a) (VP b)", b"", b"(S \xff c)", b"(S c)", b"",
    ]
    assert "3 malformed lines copied unchanged" in capsys.readouterr().err


def test_empty_line_is_malformed(tmp_path):
    codes = write_lines(tmp_path / "codes", ["#version: 0.2", "a b"])
    trees = write_lines(tmp_path / "in.en", ["(S a b)", ""])
    with pytest.raises(SystemExit, match=r"in.en:2: empty line"):
        cli_main(["apply", "--codes", str(codes), "--input", str(trees),
                  "--output", str(tmp_path / "o")])


def test_stdin_to_stdout(tmp_path, monkeypatch, capsys):
    codes = write_lines(tmp_path / "codes", ["#version: 0.2", "d o", "do g", "t h", "th e</w>"])
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"(NP (DT the) (NN dogs))\n")))
    cli_main(["apply", "--codes", str(codes)])
    captured = capsys.readouterr()
    assert captured.out == "(NP (DT the) (NN dog@@ s))\n"
    assert "1 lines, 2 words -> 3 subwords" in captured.err


@pytest.mark.slow
def test_console_error_is_one_line_naming_stdin(tmp_path):
    codes = write_lines(tmp_path / "codes", ["#version: 0.2", "a b"])
    proc = subprocess.run(
        [sys.executable, "-m", "fairseq_tree.cli.bpe", "apply", "--codes", str(codes)],
        input="(S a b)\n(S a) stray\n", capture_output=True, text=True, cwd=ROOT, timeout=120,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stdout == "(S a b)\n"
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "fairseq-tree-bpe: error: <stdin>:2: malformed tree: text outside brackets: 'stray'"
    )


@pytest.mark.parametrize("argv, message", [
    (["learn", "--symbols", "10", "--output", "x"], "at least one --trees or --text"),
    (["learn", "--method", "sentencepiece", "--symbols", "5000", "--text", "{text}",
      "--output", "{tmp}/m"],
     "sentencepiece: .*Vocabulary size too high"),
    (["apply", "--sentencepiece-model", "m.model", "--vocabulary", "v"],
     "--codes \\(subword-nmt\\) only"),
    (["apply", "--codes", "{tmp}/missing"], "No such file"),
])
def test_usage_errors_are_one_line(argv, message, tmp_path):
    text = write_lines(tmp_path / "text", ["a few words of text"] * 5)
    argv = [arg.format(text=text, tmp=tmp_path) for arg in argv]
    with pytest.raises(SystemExit, match=f"^fairseq-tree-bpe: error: .*{message}"):
        cli_main(argv)
