"""fairseq-tree-parse and the parsing backends: real link-grammar runs on English, the stanza and
CoreNLP backends up to where they would need the network, resuming, workers, and the output
going through fairseq-tree-bpe and fairseq-tree-preprocess."""

import socket
import time

import pytest

from conftest import BIBLE, run_cli, write_lines
from fairseq_tree.cli.bpe import cli_main as bpe_main
from fairseq_tree.cli.parse import cli_main
from fairseq_tree.parsing import ParseResult, ParserUnavailable, build_parser
from fairseq_tree.parsing.link_grammar import tree_for_tokens
from fairseq_tree.trees import parse_tree

# Real English, Moses-tokenized (escape=False): contractions, brackets, a one-word line, an
# empty line, a sentence link-grammar links only partly ("I don't know what it's about").
SENTENCES = [
    "The dog barked .",
    "I don 't know .",
    "",
    "He said ( quietly ) that it 's late .",
    "Jesus",
    "It cost $5.00 yesterday .",
    "I don 't know what it 's about .",
]


def leaves(line: str) -> list[str]:
    return parse_tree(line).leaves


def summary(proc) -> str:
    return proc.stderr.strip().splitlines()[-1]


@pytest.mark.slow
def test_link_grammar_parses_real_english(tmp_path, needs_link_grammar):
    src = write_lines(tmp_path / "in.en", SENTENCES)
    out = tmp_path / "out.en"
    proc = run_cli("fairseq-tree-parse", "--parser", "link-grammar", "--lang", "en",
                   "--input", src, "--output", out)
    lines = out.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == "" and len(lines) - 1 == len(SENTENCES)
    trees = lines[:-1]
    # Decorations (.n, .v-d, {!<NUMBERS>}), lower-cased first words and {} for brackets undone.
    assert trees[0] == "(S (NP The dog) (VP barked) .)"
    assert trees[1] == "(S (NP I) (VP don 't (VP know)) .)"  # sent as "don't", split back
    assert trees[2] == ""
    assert "(ADVP -LRB- quietly -RRB-)" in trees[3]
    assert trees[5] == "(S (NP It) (VP cost (NP $5.00) (NP yesterday)) .)"  # "$ 5.00" merged
    assert trees[6] == "(ROOT I don 't know what it 's about .)"  # no complete linkage: flat
    for sentence, tree in zip(SENTENCES, trees):
        if sentence:
            assert leaves(tree) == [{"(": "(", ")": ")"}.get(t, t) for t in sentence.split()]
    assert summary(proc).endswith("5 trees, 1 flat fallbacks (1 no complete linkage), "
                                  "1 empty lines")


@pytest.mark.slow
def test_link_grammar_with_null_links_and_moses(tmp_path, needs_link_grammar):
    """Raw text through sacremoses; with --max-null-count the partly linked sentence parses."""
    src = write_lines(tmp_path / "raw.en", ["I don't know what it's about.", "(Really?)"])
    proc = run_cli("fairseq-tree-parse", "--parser", "link-grammar", "--lang", "en",
                   "--tokenize", "moses", "--max-null-count", "2", "--input", src)
    trees = proc.stdout.splitlines()
    assert leaves(trees[0]) == "I don 't know what it 's about .".split()
    assert not trees[0].startswith("(ROOT")
    assert leaves(trees[1]) == ["(", "Really", "?", ")"]


def test_backend_restores_committed_sample(needs_link_grammar):
    """The raw link-grammar trees of the Bible sample give exactly the committed trees."""
    raw = (BIBLE / "link_grammar_raw.txt").read_text(encoding="utf-8").splitlines()
    trees = (BIBLE / "train.en").read_text(encoding="utf-8").splitlines()[: len(raw)]
    for raw_tree, tree in zip(raw, trees):
        assert tree_for_tokens(raw_tree, leaves(tree)) == tree


@pytest.mark.slow
def test_python_api_and_workers(tmp_path, needs_link_grammar):
    parser = build_parser("link-grammar", "en", timeout=5, stanza_dir="ignored")
    results = parser.parse([["The", "dog", "barked", "."], [], ["Jesus"]])
    assert results[0] == ParseResult("(S (NP The dog) (VP barked) .)")
    assert results[1] == ParseResult("") and leaves(results[2].tree) == ["Jesus"]
    # Two worker processes and small batches give the same lines as one process.
    src = tmp_path / "in.en"
    src.write_text("".join(" ".join(leaves(t)) + "\n" for t in
                           (BIBLE / "test.en").read_text(encoding="utf-8").splitlines()[:24]))
    one = run_cli("fairseq-tree-parse", "--parser", "link-grammar", "--lang", "en",
                  "--input", src).stdout
    two = run_cli("fairseq-tree-parse", "--parser", "link-grammar", "--lang", "en",
                  "--input", src, "--workers", "2", "--batch-size", "5").stdout
    assert two == one
    assert one.splitlines() == (BIBLE / "test.en").read_text(encoding="utf-8").splitlines()[:24]


def parse_here(capsys, *args) -> tuple[str, str]:
    """fairseq-tree-parse in this process (quicker than a subprocess for the flat backend):
    (stdout, last stderr line); an error run gives its exit message as the last line."""
    try:
        cli_main([str(arg) for arg in args])
        message = ""
    except SystemExit as exit_:
        message = str(exit_.code)
    out, err = capsys.readouterr()
    return out, (message or err.strip().splitlines()[-1])


def test_resume_and_misuse(tmp_path, capsys):
    src = write_lines(tmp_path / "in.txt", ["a b", "c", "", "d e f", "g"])
    out = tmp_path / "out.txt"
    full, _ = parse_here(capsys, "--parser", "flat", "--lang", "xx", "--input", src)
    assert full == "(ROOT a b)\n(ROOT c)\n\n(ROOT d e f)\n(ROOT g)\n"
    out.write_bytes(b"(ROOT a b)\n(ROOT c)\n(ROOT d")  # interrupted in the middle of line 3
    _, last = parse_here(capsys, "--parser", "flat", "--lang", "xx", "--input", src,
                         "--output", out, "--batch-size", "2")
    assert out.read_text() == full
    assert "3 lines parsed (2 already in the output were skipped)" in last
    short = write_lines(tmp_path / "short.txt", ["a b"])
    _, last = parse_here(capsys, "--parser", "flat", "--lang", "xx", "--input", short,
                         "--output", out)
    assert "already has 5 lines but the input has only 1" in last
    assert out.read_text() == full
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok line\nbad \xff byte\n")
    _, last = parse_here(capsys, "--parser", "flat", "--lang", "xx", "--input", bad)
    assert last.startswith(f"fairseq-tree-parse: error: {bad}:2: not valid UTF-8")


def clean_error(proc) -> str:
    """The one-line error of a failed run (and no traceback)."""
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr.strip().splitlines()[-1]


def test_stanza_missing_models_fail_fast_without_network(tmp_path, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("stanza tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    start = time.monotonic()
    with pytest.raises(ParserUnavailable) as error:
        build_parser("stanza", "de", stanza_dir=str(tmp_path / "models"))
    assert time.monotonic() - start < 30
    message = str(error.value)
    assert "\n" not in message and str(tmp_path / "models") in message
    assert (f"stanza.download('de', model_dir='{tmp_path / 'models'}', "
            "processors='tokenize,pos,constituency')") in message
    proc = run_cli("fairseq-tree-parse", "--lang", "en", "--stanza-dir", tmp_path,
                   check=False, stdin="a b\n")
    assert "stanza.download('en'" in clean_error(proc)


def test_stanza_without_a_constituency_parser_for_the_language(tmp_path):
    """French has no stanza constituency model: the error says so and names the alternatives,
    instead of sending the user to download models that do not exist."""
    with pytest.raises(ParserUnavailable) as error:
        build_parser("stanza", "fr", stanza_dir=str(tmp_path))
    message = str(error.value)
    assert "no constituency parser for 'fr'" in message and "--parser corenlp" in message
    assert "de, en" in message.split("(it has")[1]


@pytest.mark.slow
def test_corenlp_errors_are_clear(tmp_path, monkeypatch):
    with socket.socket() as sock:  # a local port that nothing listens on
        sock.bind(("localhost", 0))
        port = sock.getsockname()[1]
    proc = run_cli("fairseq-tree-parse", "--parser", "corenlp", "--lang", "en", "--corenlp-url",
                   f"http://localhost:{port}", check=False, stdin="a b\n")
    assert f"no CoreNLP server answers at http://localhost:{port}" in clean_error(proc)
    monkeypatch.setenv("CORENLP_HOME", str(tmp_path / "missing"))
    proc = run_cli("fairseq-tree-parse", "--parser", "corenlp", "--lang", "en",
                   check=False, stdin="a b\n")
    message = clean_error(proc)
    assert str(tmp_path / "missing") in message and "stanza.install_corenlp" in message
    assert "3.9.1" in message


@pytest.mark.slow
def test_parser_output_goes_through_bpe_and_preprocess(tmp_path, needs_link_grammar):
    """Trees of every offline backend, one-word sentences included, binarize."""
    tokens = ["The dog barked .", "Jesus", "I don 't know what it 's about .", "wept"]
    src = write_lines(tmp_path / "tok.en", tokens)
    raw = tmp_path / "raw"
    raw.mkdir()
    for name in ("link-grammar", "flat"):
        run_cli("fairseq-tree-parse", "--parser", name, "--lang", "en", "--input", src,
                "--output", raw / f"{name}.en")
    assert (raw / "flat.en").read_text().splitlines()[1] == "(ROOT Jesus)"
    target = write_lines(raw / "fr.txt", ["le chien a aboyé", "Jésus", "je ne sais pas", "pleura"])
    codes = tmp_path / "codes"
    bpe = lambda *args: bpe_main([str(arg) for arg in args])  # noqa: E731  (in this process)
    bpe("learn", "--symbols", "20", "--min-frequency", "1", "--trees", raw / "flat.en",
        "--text", target, "--output", codes)
    data = tmp_path / "bpe"
    data.mkdir()
    for name in ("link-grammar", "flat"):
        bpe("apply", "--codes", codes, "--input", raw / f"{name}.en",
            "--output", data / f"{name}.en")
        bpe("apply", "--codes", codes, "--text", "--input", target,
            "--output", data / f"{name}.fr")
    one_word = (data / "flat.en").read_text().splitlines()
    split, whole = parse_tree(one_word[1]), parse_tree(one_word[3])  # "Jesus" split, "wept" not
    assert len(split.leaves) > 1 and [n.label for n in split.nodes] == ["ROOT"]
    assert whole.leaves == ["wept"] and whole.nodes == []
    run_cli("fairseq-tree-preprocess", "--source-lang", "en", "--target-lang", "fr",
            "--trainpref", data / "flat", "--validpref", data / "link-grammar",
            "--joined-dictionary", "--destdir", tmp_path / "bin", "--workers", "1")
    assert (tmp_path / "bin" / "valid.en-fr.en.spans.bin").exists()
