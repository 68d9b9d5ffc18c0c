"""fairseq-tree-preprocess: datasets written, dictionaries, summary, and every bad-input path."""

import filecmp
from pathlib import Path

import pytest
from fairseq.data import Dictionary, data_utils

from conftest import TARGETS, TREES, run_cli, write_lines
from fairseq_tree.data.label_dictionary import label_symbol
from fairseq_tree.trees.normal_form import parse_tree


def preprocess(raw: Path, dest: Path, *extra, check=True, splits=("train", "valid", "test")):
    prefs = []
    for split in splits:
        prefs += [f"--{split}pref", raw / split]
    return run_cli(
        "fairseq-tree-preprocess", "--source-lang", "en", "--target-lang", "fr",
        *prefs, "--destdir", dest, *extra, check=check,
    )


def load(dest: Path, name: str):
    dataset = data_utils.load_indexed_dataset(str(dest / name), None, "mmap")
    assert dataset is not None, f"missing dataset {name}"
    return [item.tolist() for item in dataset]


def output_files(dest: Path):
    return sorted(p.name for p in dest.iterdir()) if dest.exists() else []


def test_binarized_datasets_hold_leaves_labels_spans_and_target(tree_corpus, tmp_path):
    dest = tmp_path / "bin"
    proc = preprocess(tree_corpus, dest, "--joined-dictionary")
    d = Dictionary.load(str(dest / "dict.en.txt"))
    assert filecmp.cmp(dest / "dict.en.txt", dest / "dict.fr.txt", shallow=False)

    leaves, labels = load(dest, "train.en-fr.en"), load(dest, "train.en-fr.en.labels")
    spans, target = load(dest, "train.en-fr.en.spans"), load(dest, "train.en-fr.fr")
    assert len(leaves) == len(labels) == len(spans) == len(target) == 3 * len(TREES)
    for i, (line, tgt_line) in enumerate(zip(TREES * 3, TARGETS * 3)):
        tree = parse_tree(line)
        assert [d[j] for j in leaves[i]] == tree.leaves + ["</s>"]
        assert [d[j] for j in labels[i]] == [label_symbol(n.label) for n in tree.nodes]
        assert spans[i] == [x for n in tree.nodes for x in (n.start, n.end)]
        assert d.string(target[i]) == tgt_line

    # Multi-sentence line: one example whose document root spans both sentences.
    doc = parse_tree(TREES[3])
    assert len(doc.leaves) == 4 and (0, 4) in {(n.start, n.end) for n in doc.nodes}
    assert "[S]" in d.indices and "[NP]" in d.indices and "[DOC]" in d.indices
    assert "train: 18 pairs" in proc.stdout and "0 line pairs skipped" in proc.stdout
    assert (dest / "preprocess.log").exists()


def test_workers_give_identical_output(tree_corpus, tmp_path, monkeypatch):
    import fairseq_tree.data.binarize as binarize

    one, two = tmp_path / "one", tmp_path / "two"
    preprocess(tree_corpus, one)
    # Chunks of 4 lines make two workers genuinely share the 18 training pairs.
    monkeypatch.setattr(binarize, "CHUNK_SIZE", 4)
    from fairseq_tree.cli.preprocess import cli_main

    cli_main([
        "-s", "en", "-t", "fr", "--trainpref", str(tree_corpus / "train"),
        "--validpref", str(tree_corpus / "valid"), "--testpref", str(tree_corpus / "test"),
        "--destdir", str(two), "--workers", "2",
    ])
    names = [n for n in output_files(one) if n != "preprocess.log"]
    assert names == [n for n in output_files(two) if n != "preprocess.log"]
    for name in names:
        assert filecmp.cmp(one / name, two / name, shallow=False), name


def test_workers_send_their_tensors_back_by_value():
    """What a worker returns crosses the pool's pipe with each tensor as its values: torch's own
    reduction of a tensor (shared memory, a file a tensor) made binarizing in workers slower than
    in one process. The values, shapes and types come back unchanged."""
    import pickle

    import torch

    from fairseq_tree.data.binarize import EncodedPair, _pickled_by_value
    from fairseq_tree.data.tree_encoding import EncodedTree

    tree = EncodedTree(leaves=torch.tensor([5, 6, 2]), labels=torch.tensor([9]),
                       spans=torch.tensor([[0, 2]]).view(-1, 2), tags=torch.tensor([1, 1, 1]))
    results = [EncodedPair(3, source=tree, target=torch.tensor([7, 2])), EncodedPair(4)]
    sent = _pickled_by_value(lambda chunk: chunk, results)
    assert b"_rebuild_tensor" not in sent and b"torch.multiprocessing" not in sent
    back = pickle.loads(sent)
    assert back[1] == results[1] and back[0].lineno == 3
    for got, expected in [(back[0].target, results[0].target),
                          *((getattr(back[0].source, name), getattr(tree, name))
                            for name in ("leaves", "labels", "spans", "tags"))]:
        assert got.dtype == expected.dtype == torch.long and torch.equal(got, expected)


def test_labels_survive_vocabulary_cut(tree_corpus, tmp_path):
    dest = tmp_path / "bin"
    preprocess(tree_corpus, dest, "--nwordssrc", "8", "--thresholdsrc", "2")
    d = Dictionary.load(str(dest / "dict.en.txt"))
    assert len(d) % 8 == 0
    labels = {node.label for line in TREES for node in parse_tree(line).nodes}
    assert {"S", "NP", "VP", "PP", "DOC", "FRAG"} <= labels
    for label in labels:
        assert label_symbol(label) in d.indices
    labels = load(dest, "test.en-fr.en.labels")
    assert all(j != d.unk() for item in labels for j in item)


@pytest.mark.slow
def test_given_dictionaries_are_used(tree_corpus, tmp_path):
    first = tmp_path / "first"
    preprocess(tree_corpus, first)
    second = tmp_path / "second"
    preprocess(
        tree_corpus, second, "--srcdict", first / "dict.en.txt", "--tgtdict", first / "dict.fr.txt",
        splits=("valid",),
    )
    assert filecmp.cmp(first / "dict.en.txt", second / "dict.en.txt", shallow=False)
    assert load(first, "valid.en-fr.en.spans") == load(second, "valid.en-fr.en.spans")


def test_mismatched_line_counts_stop_with_nothing_written(tree_corpus, tmp_path):
    write_lines(tree_corpus / "valid.fr", TARGETS[:-1])
    dest = tmp_path / "bin"
    proc = preprocess(tree_corpus, dest, check=False)
    assert proc.returncode == 1
    # FILE:LINE where the shorter file ends
    assert (f"{tree_corpus / 'valid.fr'}:5: the file ends here, after 5 lines, but "
            f"{tree_corpus / 'valid.en'} has 6") in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not dest.exists()  # not even the already finished train split or dictionaries, nor
    # the folder the run made


def test_a_failed_run_leaves_a_destination_that_was_there_as_it_was(tree_corpus, tmp_path):
    write_lines(tree_corpus / "valid.fr", TARGETS[:-1])
    dest = tmp_path / "bin"
    dest.mkdir()
    (dest / "notes.txt").write_text("kept\n")
    assert preprocess(tree_corpus, dest, check=False).returncode == 1
    assert output_files(dest) == ["notes.txt"]
    nested = tmp_path / "new" / "deeper" / "bin"
    assert preprocess(tree_corpus, nested, check=False).returncode == 1
    assert not (tmp_path / "new").exists()  # every folder the run made is gone


def test_an_empty_shorter_file_is_named_without_a_line(tree_corpus, tmp_path):
    write_lines(tree_corpus / "valid.en", [])
    proc = preprocess(tree_corpus, tmp_path / "bin", check=False)
    assert proc.returncode == 1
    assert (f"{tree_corpus / 'valid.en'}: the file is empty, but "
            f"{tree_corpus / 'valid.fr'} has 6") in proc.stderr


@pytest.mark.parametrize(
    "side, bad_line, reason",
    [
        ("en", "(S (NP the dog) (VP barked)", "malformed tree: unbalanced"),
        ("en", "", "empty line"),
        ("fr", "", "empty line"),
    ],
)
def test_bad_line_is_an_error_naming_file_and_line(tree_corpus, tmp_path, side, bad_line, reason):
    lines = (TREES if side == "en" else TARGETS) * 3
    lines[7] = bad_line
    write_lines(tree_corpus / f"train.{side}", lines)
    dest = tmp_path / "bin"
    proc = preprocess(tree_corpus, dest, check=False)
    assert proc.returncode == 1
    assert f"{tree_corpus / ('train.' + side)}:8: {reason}" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert output_files(dest) == []


def test_skip_invalid_drops_both_sides_together(tree_corpus, tmp_path):
    trees, targets = TREES * 3, TARGETS * 3
    trees[4] = "(S (NP the dog)) (VP"  # malformed source
    targets[10] = ""  # empty target
    write_lines(tree_corpus / "train.en", trees)
    write_lines(tree_corpus / "train.fr", targets)
    dest = tmp_path / "bin"
    proc = preprocess(tree_corpus, dest, "--skip-invalid")
    assert "train: 16 pairs" in proc.stdout and "train: 2 line pairs skipped" in proc.stdout
    assert f"{tree_corpus / 'train.en'}:5:" in proc.stdout
    assert f"{tree_corpus / 'train.fr'}:11:" in proc.stdout

    d = Dictionary.load(str(dest / "dict.en.txt"))
    t = Dictionary.load(str(dest / "dict.fr.txt"))
    kept = [i for i in range(len(trees)) if i not in (4, 10)]
    leaves, target = load(dest, "train.en-fr.en"), load(dest, "train.en-fr.fr")
    for row, i in enumerate(kept):
        assert [d[j] for j in leaves[row][:-1]] == parse_tree(trees[i]).leaves
        assert t.string(target[row]) == targets[i]


def test_interrupted_run_leaves_no_output(tree_corpus, tmp_path, monkeypatch):
    import fairseq_tree.cli.preprocess as cli
    import fairseq_tree.data.preprocess as library

    calls = []
    real = library.binarize_split

    def interrupt_after_train(name, *args, **kwargs):
        calls.append(name)
        if name != "train":
            raise KeyboardInterrupt
        return real(name, *args, **kwargs)

    monkeypatch.setattr(library, "binarize_split", interrupt_after_train)
    dest = tmp_path / "bin"
    with pytest.raises(KeyboardInterrupt):
        cli.cli_main([
            "-s", "en", "-t", "fr", "--trainpref", str(tree_corpus / "train"),
            "--validpref", str(tree_corpus / "valid"), "--destdir", str(dest),
        ])
    assert calls == ["train", "valid"]
    assert not dest.exists()


def test_missing_input_file_is_named(tree_corpus, tmp_path):
    (tree_corpus / "test.fr").unlink()
    proc = preprocess(tree_corpus, tmp_path / "bin", check=False)
    assert proc.returncode == 1
    assert f"{tree_corpus / 'test.fr'}: no such file" in proc.stderr


def test_progress_is_logged_when_not_on_a_terminal(caplog):
    from fairseq_tree.data.progress import Progress

    with caplog.at_level("INFO"), Progress("binarizing train", interval=1000) as progress:
        for _ in range(5):
            progress.update(900)
    lines = [r.getMessage() for r in caplog.records if r.name == "fairseq_tree.data.progress"]
    assert [line.split(" (")[0] for line in lines] == [
        "binarizing train: 1800 pairs", "binarizing train: 2700 pairs",
        "binarizing train: 3600 pairs", "binarizing train: 4500 pairs",
    ]


def test_skip_invalid_says_it_skips_bad_target_trees_too():
    from fairseq_tree.cli.preprocess import get_parser

    (action,) = [a for a in get_parser()._actions if "--skip-invalid" in a.option_strings]
    assert "source tree" in action.help and "target tree" in action.help


def test_target_nodes_are_counted_only_for_written_trees(tree_corpus, tmp_path):
    proc = preprocess(tree_corpus, tmp_path / "bin")
    assert "target tokens" in proc.stdout and "target nodes" not in proc.stdout
    assert "target nodes" not in (tmp_path / "bin" / "preprocess.log").read_text()
