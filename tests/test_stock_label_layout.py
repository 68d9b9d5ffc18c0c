"""fairseq's own label layout: ``label/`` made by the stock command of fairseq's RoBERTa GLUE
recipe, ``fairseq-preprocess --only-source --trainpref train.label ... --destdir bin/label``
without ``--srcdict``. Its dictionary lists the classes in frequency order and is padded to a
multiple of 8 entries with ``madeupword0000``, ...: those are no classes, and the class of a
label is its index less ``nspecial``, as in fairseq's ``sentence_prediction``. Every tree
classifier trains on it and ``fairseq-validate --valid-subset test`` scores it; a real mismatch
is still refused in one line."""

import shutil
from pathlib import Path

import pytest
from fairseq.data import Dictionary

from conftest import run_cli as run_command
from conftest import write_lines
from fairseq_tree.data.label_dictionary import class_symbols
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.trees.normal_form import parse_tree
from tagged_corpus import SPLITS, binarize_trees, prefs, run_cli, sentence_pairs, write_raw
from test_recursive_training import (
    COMMON,
    MULTI_BRANCH,
    TREE_ATTENTION,
    logits_on_test,
    same_accuracy,
)
from test_tree_classification import load_task, recomputed_accuracy, run_train_error, validate

TREE_CLASSIFIER = ["--arch", "tree_classifier_tiny"]
CRITERION = ["--criterion", "sentence_prediction"]
FIVE_CLASSES = ["tiny", "short", "medium", "long", "longest"]


def stock_labels(raw: Path, dest: Path, suffix: str):
    """label/ exactly as fairseq's GLUE recipe makes it: no --srcdict."""
    run_cli("fairseq-preprocess", "--only-source", *prefs(raw, suffix), "--destdir",
            dest / "label", "--workers", "1")


LENGTH_CLASS = {1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 6: 3, 7: 4, 8: 4}


def by_length(tree_line: str) -> str:
    """One of five classes from the number of words: 1, 2, 3-4, 5-6, 7-8."""
    return FIVE_CLASSES[LENGTH_CLASS[len(parse_tree(tree_line).leaves)]]


@pytest.fixture(scope="module")
def stock(tmp_path_factory):
    """Three corpora with stock label/ folders: two classes (polarity, named N and P), five
    classes (length), and sentence pairs (same polarity)."""
    work = tmp_path_factory.mktemp("stock-labels")
    raw = write_raw(work / "raw", seed=7)
    for split in SPLITS:
        trees = (raw / split).read_text("utf-8").splitlines()
        polarity = (raw / f"{split}.label").read_text("utf-8").split()
        write_lines(raw / f"{split}.np", ["NP"[int(p)] for p in polarity])
        write_lines(raw / f"{split}.five", [by_length(t) for t in trees])
    corpora = {}
    for name, suffix in (("two", ".np"), ("five", ".five")):
        binarize_trees(raw, work / name / "input0", "--leaf-tags")
        stock_labels(raw, work / name, suffix)
        corpora[name] = work / name
    pairs = sentence_pairs(work / "pairs")
    shutil.rmtree(pairs / "label")  # made with --srcdict
    stock_labels(pairs.parent / "raw", pairs, ".same")
    corpora["pairs"] = pairs
    return corpora


def test_the_stock_dictionary_is_padded_and_its_padding_is_no_class(stock):
    for name, expected in (("two", {"N", "P"}), ("five", set(FIVE_CLASSES)),
                           ("pairs", {"0", "1"})):
        classes = Dictionary.load(str(stock[name] / "label/dict.txt"))
        assert len(classes) % 8 == 0 and "madeupword0000" in classes.symbols, name
        assert set(class_symbols(classes)) == expected, name


# each classifier on a stock layout, each layout by a classifier: the layout is the task's, read
# the same whatever the model
@pytest.mark.slow
@pytest.mark.parametrize("corpus, arch", [
    ("two", MULTI_BRANCH), ("five", TREE_CLASSIFIER), ("five", TREE_ATTENTION),
    ("pairs", MULTI_BRANCH),
])
def test_every_classifier_trains_and_validates_on_the_stock_layout(stock, tmp_path, corpus,
                                                                   arch):
    data = stock[corpus]
    num_classes = 5 if corpus == "five" else 2
    run_command("fairseq-train", data, *COMMON, *arch, "--criterion", "sentence_prediction",
                  "--num-classes", num_classes, "--max-update", 12, "--save-dir", tmp_path)
    checkpoint = tmp_path / "checkpoint_last.pt"
    if corpus == "pairs":
        logits, sample = logits_on_test(data, checkpoint)
        recomputed = 100.0 * float((logits.argmax(-1) == sample["target"].view(-1)).float().mean())
    else:
        recomputed = recomputed_accuracy(data, checkpoint)
    assert same_accuracy(validate(data, checkpoint), recomputed)


def test_class_indices_are_fairseqs(stock):
    """The target of each example is its label's index in the stock dictionary less nspecial,
    which is what fairseq's sentence_prediction trains on."""
    data = stock["five"]
    task, _ = load_task(data, *TREE_CLASSIFIER, *CRITERION, "--num-classes", 5)
    task.load_dataset("test")
    classes = Dictionary.load(str(data / "label/dict.txt"))
    raw = data.parent / "raw" / "test.five"
    lines = raw.read_text("utf-8").split()
    dataset = task.dataset("test")
    targets = {int(dataset[i]["id"]): int(dataset[i]["target"]) for i in range(len(dataset))}
    assert [targets[i] for i in range(len(lines))] == [
        classes.index(label) - classes.nspecial for label in lines]
    assert task.cfg.num_classes == 5


def test_num_classes_is_read_from_the_stock_dictionary(stock):
    task, _ = load_task(stock["two"], *TREE_CLASSIFIER, *CRITERION)
    assert task.cfg.num_classes == 2


@pytest.mark.slow
def test_a_real_mismatch_is_refused_in_one_line(stock, tmp_path):
    data = stock["five"]
    with pytest.raises(FairseqTreeError) as refused:
        load_task(data, *TREE_CLASSIFIER, *CRITERION, "--num-classes", 4)
    symbols = " ".join(class_symbols(Dictionary.load(str(data / "label/dict.txt"))))
    assert str(refused.value) == (
        f"tree_classification: error: --num-classes 4 disagrees with {data}/label/dict.txt, "
        f"which lists 5 classes ({symbols})")
    message = run_train_error(data, *TREE_CLASSIFIER, "--num-classes", 4)
    assert message == str(refused.value)


def test_a_label_outside_the_dictionary_is_refused_with_its_line(stock, tmp_path):
    """A test label that the training labels never had: binarized with the stock dictionary it
    becomes <unk>, and the run stops at its line."""
    data = tmp_path / "bin"
    shutil.copytree(stock["two"], data)
    raw = stock["two"].parent / "raw"
    labels = (raw / "test.np").read_text("utf-8").split()
    labels[4] = "X"
    write_lines(tmp_path / "test.np", labels)
    run_cli("fairseq-preprocess", "--only-source", "--testpref", tmp_path / "test.np",
            "--destdir", data / "label", "--srcdict", data / "label/dict.txt", "--workers", "1")
    task, _ = load_task(data, *TREE_CLASSIFIER, *CRITERION, "--num-classes", 2)
    with pytest.raises(FairseqTreeError) as refused:
        task.load_dataset("test")
    assert str(refused.value) == (
        f"tree_classification: error: {data}/label/test: line 5: the label is not a class of "
        "the label dictionary (it was binarized as <unk>)")


def test_a_padding_symbol_as_a_label_is_refused(stock, tmp_path):
    data = tmp_path / "bin"
    shutil.copytree(stock["two"], data)
    labels = (stock["two"].parent / "raw" / "test.np").read_text("utf-8").split()
    labels[2] = "madeupword0001"
    write_lines(tmp_path / "test.np", labels)
    run_cli("fairseq-preprocess", "--only-source", "--testpref", tmp_path / "test.np",
            "--destdir", data / "label", "--srcdict", data / "label/dict.txt", "--workers", "1")
    task, _ = load_task(data, *TREE_CLASSIFIER, *CRITERION, "--num-classes", 2)
    with pytest.raises(FairseqTreeError, match=r"label/test: line 3: the label 'madeupword0001' "
                       r"is not one of the 2 classes \(--num-classes\)"):
        task.load_dataset("test")
