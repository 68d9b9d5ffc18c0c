"""The tree_classification task, tree_classifier model and node_classification criterion: real
fairseq runs on sentiment-labelled trees, the label leak, batch invariance, subtree locality,
per-node targets after BPE, SST-2 accuracy from a 5-class model, and every bad input."""

import random
import re
from pathlib import Path

import pytest
import torch
from fairseq import checkpoint_utils, options, tasks
from fairseq.data import Dictionary, data_utils
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

from conftest import PLUGIN_DIR, run_cli, write_lines
from fairseq_tree.criterions.node_classification import parse_class_groups, root_accuracy
from fairseq_tree.data.classification_datasets import NO_CLASS
from fairseq_tree.data.label_dictionary import label_symbol
from fairseq_tree.data.node_targets import NODE_INPUT_LABEL
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.trees.normal_form import parse_tree

WORDS = ("the film is a very good and moving story but its ending feels flat dull long "
         "painfully slow yet charming actors shine").split()
CLASSES = ["0", "1", "2", "3", "4"]
TASK = ["--user-dir", PLUGIN_DIR, "--task", "tree_classification", "--num-workers", "0"]
TRAIN = [*TASK, "--arch", "tree_classifier_tiny", "--optimizer", "adam", "--lr", "3e-3",
         "--max-tokens", "2048", "--seed", "1", "--log-format", "simple", "--log-interval", "5",
         "--no-epoch-checkpoints", "--dropout", "0.1"]


def sentiment_tree(rng: random.Random, words: list) -> str:
    """A random binary tree over ``words`` with a class on every word and phrase, as SST writes
    it: ``(3 (2 It) (4 ...))``."""
    if len(words) == 1:
        return f"({rng.choice(CLASSES)} {words[0]})"
    cut = rng.randint(1, len(words) - 1)
    left, right = sentiment_tree(rng, words[:cut]), sentiment_tree(rng, words[cut:])
    return f"({rng.choice(CLASSES)} {left} {right})"


def sentiment_corpus(rng: random.Random, count: int) -> list:
    return [sentiment_tree(rng, rng.sample(WORDS, rng.randint(1, 8))) for _ in range(count)]


def root_class(tree: str) -> str:
    return re.match(r"\((\S+)", tree).group(1)


def binarize(raw: Path, dest: Path, *extra, check=True, node_targets=True):
    """input0/ with fairseq-tree-preprocess, label/ with stock fairseq-preprocess."""
    splits = ("train", "valid", "test")
    prefs = [arg for split in splits for arg in (f"--{split}pref", raw / split)]
    label_prefs = [arg for split in splits for arg in (f"--{split}pref", raw / f"{split}.label")]
    classes = raw / "classes.txt"
    tree_args = ["--node-targets", classes] if node_targets else []
    trees = run_cli("fairseq-tree-preprocess", "--only-source", *prefs, "--destdir",
                    dest / "input0", *tree_args, *extra, check=check)
    run_cli("fairseq-preprocess", "--only-source", *label_prefs, "--destdir", dest / "label",
            "--srcdict", classes)
    return trees


def write_corpus(raw: Path, seed: int, sizes=(40, 12, 12)) -> Path:
    rng = random.Random(seed)
    raw.mkdir(parents=True, exist_ok=True)
    write_lines(raw / "classes.txt", [f"{c} 1" for c in CLASSES])
    for split, count in zip(("train", "valid", "test"), sizes):
        trees = sentiment_corpus(rng, count)
        write_lines(raw / split, trees)
        write_lines(raw / f"{split}.label", [root_class(t) for t in trees])
    return raw


@pytest.fixture(scope="module")
def sst(tmp_path_factory):
    work = tmp_path_factory.mktemp("sst")
    binarize(write_corpus(work / "raw", seed=3), work / "bin")
    return work


def load_task(data: Path, *extra):
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [str(data), *map(str, TASK), *map(str, extra)])
    cfg = convert_namespace_to_omegaconf(args)
    return tasks.setup_task(cfg.task), cfg


def items(path: Path) -> list:
    return [x.tolist() for x in data_utils.load_indexed_dataset(str(path), None, "mmap")]


@pytest.mark.slow
def test_labels_are_targets_and_never_inputs(sst, tmp_path):
    """Relabelling every node and word changes the targets only: the binarized input is byte
    for byte the same, and its node labels are the one hidden symbol."""
    raw = sst / "raw"
    relabelled = tmp_path / "raw"
    relabelled.mkdir()
    rng = random.Random(9)
    for name in ("classes.txt", "train.label", "valid.label", "test.label"):
        (relabelled / name).write_bytes((raw / name).read_bytes())
    for split in ("train", "valid", "test"):
        text = (raw / split).read_text(encoding="utf-8")
        (relabelled / split).write_text(
            re.sub(r"\((\d)", lambda m: "(" + rng.choice(CLASSES), text), encoding="utf-8")
    binarize(relabelled, tmp_path / "bin")
    for split in ("train", "valid", "test"):
        for suffix in ("", ".labels", ".spans"):
            for ext in (".bin", ".idx"):
                name = f"{split}{suffix}{ext}"
                assert (tmp_path / "bin/input0" / name).read_bytes() == \
                       (sst / "bin/input0" / name).read_bytes(), name
        assert items(tmp_path / "bin/input0" / f"{split}.node_targets") != \
               items(sst / "bin/input0" / f"{split}.node_targets")
    assert (tmp_path / "bin/input0/dict.txt").read_bytes() == (sst / "bin/input0/dict.txt").read_bytes()
    d = Dictionary.load(str(sst / "bin/input0/dict.txt"))
    hidden = d.index(label_symbol(NODE_INPUT_LABEL))
    assert all(x == hidden for item in items(sst / "bin/input0/train.labels") for x in item)
    assert not any(label_symbol(c) in d.indices for c in CLASSES)


def layout_files(folder: Path) -> dict:
    """The binarized files of a layout folder (not its log), by name."""
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.name != "preprocess.log"}


@pytest.mark.slow
def test_preprocess_task_mode_makes_the_layout(sst, tmp_path):
    """fairseq-tree-preprocess --task tree_classification: {pref}.input0 and {pref}.label of each
    split make input0/ and label/ byte for byte as the two commands do, and the task loads
    them; with {pref}.input1, input1/ is binarized with input0's dictionary (pairs), and without
    --label-dict the classes are fairseq-preprocess's own."""
    raw = tmp_path / "raw"
    raw.mkdir()
    for split in ("train", "valid", "test"):
        (raw / f"{split}.input0").write_bytes((sst / "raw" / split).read_bytes())
        (raw / f"{split}.label").write_bytes((sst / "raw" / f"{split}.label").read_bytes())
    prefs = [arg for split in ("train", "valid", "test")
             for arg in (f"--{split}pref", raw / split)]
    classes = sst / "raw" / "classes.txt"
    run_cli("fairseq-tree-preprocess", "--task", "tree_classification", *prefs, "--destdir",
            tmp_path / "bin", "--label-dict", classes, "--node-targets", classes)
    for folder in ("input0", "label"):
        assert layout_files(tmp_path / "bin" / folder) == layout_files(sst / "bin" / folder)
    assert not (tmp_path / "bin" / "input1").exists()
    task, _ = load_task(tmp_path / "bin", "--node-targets", "--criterion", "node_classification",
                        "--arch", "tree_classifier_tiny")
    assert len(task.load_dataset("valid")) == 12

    for split in ("train", "valid", "test"):  # pairs: the same trees as second trees
        (raw / f"{split}.input1").write_bytes((sst / "raw" / split).read_bytes())
    run_cli("fairseq-tree-preprocess", "--task", "tree_classification", *prefs, "--destdir",
            tmp_path / "pairs")
    input0, input1 = (layout_files(tmp_path / "pairs" / key) for key in ("input0", "input1"))
    assert input1 == input0 and "train.labels.bin" in input0
    task, _ = load_task(tmp_path / "pairs", "--criterion", "sentence_prediction",
                        "--arch", "tree_classifier_tiny")
    assert task.sentence_pairs and len(task.load_dataset("test")) == 12


@pytest.mark.slow
def test_node_targets_line_up_with_leaves_and_nodes_after_bpe(tmp_path):
    """Words split by BPE: the node over a word's pieces carries the word's class, the pieces
    none; every phrase keeps its class; the collated targets follow the model's columns."""
    raw = write_corpus(tmp_path / "raw", seed=5, sizes=(20, 6, 6))
    originals = (raw / "train").read_text(encoding="utf-8").splitlines()
    run_cli("fairseq-tree-bpe", "learn", "--method", "subword-nmt", "--symbols", "15",
            "--trees", raw / "train", "--output", tmp_path / "codes")
    bpe_raw = tmp_path / "bpe"
    bpe_raw.mkdir()
    for name in ("classes.txt", "train.label", "valid.label", "test.label"):
        (bpe_raw / name).write_bytes((raw / name).read_bytes())
    for split in ("train", "valid", "test"):
        run_cli("fairseq-tree-bpe", "apply", "--codes", tmp_path / "codes", "--input",
                raw / split, "--output", bpe_raw / split)
    binarize(bpe_raw, tmp_path / "bin")
    task, _ = load_task(tmp_path / "bin", "--node-targets", "--criterion", "node_classification",
                        "--arch", "tree_classifier_tiny", "--no-shuffle")
    task.load_dataset("train")
    dataset = task.dataset("train")
    batch = dataset.collater([dataset[i] for i in range(len(dataset))])
    d, split_words = task.source_dictionary, 0
    for row, index in enumerate(batch["id"].tolist()):
        tree = parse_tree(originals[index])
        length = int(batch["net_input"]["src_lengths"][row]) - 1  # without EOS
        pieces = [d[t] for t in batch["net_input"]["src_tokens"][row, :length]]
        words, first_piece = [], []  # original word of each piece, piece span of each word
        for k, piece in enumerate(pieces):
            if not words or not pieces[k - 1].endswith("@@"):
                first_piece.append(k)
            words.append(len(first_piece) - 1)
        first_piece.append(len(pieces))
        assert len(first_piece) - 1 == len(tree.leaves)
        leaf_targets = batch["target"]["leaves"][row]
        node_targets = dict(zip(map(tuple, batch["net_input"]["src_node_spans"][row].tolist()),
                                batch["target"]["nodes"][row].tolist()))
        for j, tag in enumerate(tree.tags):  # each word's class: on its leaf, or its node
            start, end = first_piece[j], first_piece[j + 1]
            if end - start == 1:
                assert leaf_targets[start] == CLASSES.index(tag)
            else:
                split_words += 1
                assert node_targets[(start, end)] == CLASSES.index(tag)
                assert (leaf_targets[start:end] == NO_CLASS).all()
        for node in tree.nodes:  # each phrase's class, on the node over the same words
            assert node_targets[(first_piece[node.start], first_piece[node.end])] == \
                CLASSES.index(node.label)
        assert leaf_targets[len(pieces)] == NO_CLASS  # EOS
    assert split_words > 10


def train(data: Path, save: Path, *extra):
    return run_cli("fairseq-train", data, *TRAIN, "--max-update", "40", "--save-dir", save,
                   *extra)


def validate(data: Path, checkpoint: Path) -> float:
    proc = run_cli("fairseq-validate", data, *TASK, "--valid-subset", "test", "--path",
                   checkpoint, "--batch-size", "8")
    found = re.search(r"valid on 'test' subset .*\| accuracy ([\d.]+)", proc.stdout + proc.stderr)
    assert found, proc.stdout + proc.stderr
    return float(found.group(1))


def recomputed_accuracy(data: Path, checkpoint: Path, groups=None) -> float:
    """The test accuracy of a checkpoint, computed here example by example."""
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task(
        [str(checkpoint)], arg_overrides={"data": str(data)})
    model = models[0].eval()
    task.load_dataset("test")
    dataset = task.dataset("test")
    correct = counted = 0
    with torch.no_grad():
        for i in range(len(dataset)):
            sample = dataset.collater([dataset[i]])
            logits, extra = model(**sample["net_input"], classification_head_name=
                                  "sentence_classification_head", every_unit=True)
            target = sample["target"]
            if isinstance(target, dict):  # node targets: the root's
                root = int(extra["root_columns"][0])
                target = torch.cat([target["leaves"], target["nodes"]], 1)[0, root]
            probs = logits[0, int(extra["root_columns"][0])].softmax(-1)
            predicted, gold = int(probs.argmax()), int(target)
            if groups is not None:
                group_of = {c: g for g, members in enumerate(groups) for c in members}
                if gold not in group_of:
                    continue
                predicted = max(range(len(groups)), key=lambda g: sum(probs[c] for c in groups[g]))
                gold = group_of[gold]
            correct, counted = correct + (predicted == gold), counted + 1
    return 100.0 * correct / counted


@pytest.mark.slow
def test_sentence_labels_train_and_validate(sst, tmp_path):
    """One label per tree (label/): fairseq-train with sentence_prediction learns the training
    set, and fairseq-validate prints the test accuracy that the checkpoint really has."""
    proc = train(sst / "bin", tmp_path / "ck", "--criterion", "sentence_prediction",
                 "--max-update", "60")
    accuracies = [float(x) for x in re.findall(r"\| train \| .*\| accuracy ([\d.]+)", proc.stdout)]
    assert accuracies and accuracies[-1] > accuracies[0]
    printed = validate(sst / "bin", tmp_path / "ck/checkpoint_last.pt")
    recomputed = recomputed_accuracy(sst / "bin", tmp_path / "ck/checkpoint_last.pt")
    assert printed == pytest.approx(recomputed, abs=0.05)  # sentence_prediction logs round=1


@pytest.mark.slow
def test_node_targets_train_and_validate_with_class_groups(sst, tmp_path):
    """Every node's class (SST-5 style), SST-2 accuracy from the 5-class model."""
    proc = train(sst / "bin", tmp_path / "ck", "--node-targets", "--criterion",
                 "node_classification", "--class-groups", "0,1/3,4")
    losses = [float(x) for x in re.findall(r"\| train \| .*?\| loss ([\d.]+)", proc.stdout)]
    assert losses and losses[-1] < losses[0]
    assert "unit_accuracy" in proc.stdout
    printed = validate(sst / "bin", tmp_path / "ck/checkpoint_last.pt")
    expected = recomputed_accuracy(sst / "bin", tmp_path / "ck/checkpoint_last.pt",
                                   groups=[(0, 1), (3, 4)])
    assert printed == pytest.approx(expected, abs=0.01)


@pytest.mark.slow
def test_roberta_baseline_on_the_leaves(sst, tmp_path):
    """fairseq's own roberta, same size, from scratch on the leaves of the same trees."""
    run_cli("fairseq-train", sst / "bin", *TASK, "--tree-input", "leaves-only", "--arch",
            "roberta", "--encoder-layers", "2", "--encoder-embed-dim", "64",
            "--encoder-ffn-embed-dim", "128", "--encoder-attention-heads", "4", "--init-token",
            "0", "--criterion", "sentence_prediction", "--optimizer", "adam", "--lr", "1e-3",
            "--max-tokens", "2048", "--max-update", "5", "--save-dir", tmp_path / "ck",
            "--no-epoch-checkpoints")
    proc = run_cli("fairseq-validate", sst / "bin", *TASK, "--valid-subset", "test", "--path",
                   tmp_path / "ck/checkpoint_last.pt", "--batch-size", "8")
    assert re.search(r"valid on 'test' subset .*\| accuracy [\d.]+", proc.stdout + proc.stderr)


@pytest.mark.slow
def test_a_tree_classifier_given_the_leaves_only_is_refused(sst):
    """--tree-input leaves-only gives a model no trees: the task says so when it builds a tree
    classifier, and points to roberta, not to another task."""
    task, cfg = load_task(sst / "bin", "--tree-input", "leaves-only", "--arch",
                          "tree_classifier_tiny", "--criterion", "sentence_prediction")
    with pytest.raises(FairseqTreeError) as error:
        task.build_model(cfg.model)
    assert str(error.value) == (
        "tree_classification: error: --arch tree_classifier_tiny reads trees, and --tree-input "
        "leaves-only gives it the leaves alone: use --tree-input tree with it, or train a "
        "sequence classifier on the leaves (fairseq's roberta: --arch roberta --init-token 0)")


def float64_classifier(data: Path, *extra):
    task, cfg = load_task(data, "--arch", "tree_classifier_tiny", "--dropout", "0",
                          "--criterion", "sentence_prediction", *extra)
    torch.manual_seed(0)
    model = task.build_model(cfg.model).double().eval()
    task.load_dataset("test")
    return task, model


def unit_logits(model, sample):
    logits, extra = model(**sample["net_input"], classification_head_name=
                          "sentence_classification_head", every_unit=True)
    return logits, extra["root_columns"]


@pytest.mark.slow
def test_one_example_alone_or_in_a_padded_batch(sst):
    task, model = float64_classifier(sst / "bin")
    dataset = task.dataset("test")
    batch = dataset.collater([dataset[i] for i in range(len(dataset))])
    with torch.no_grad():
        logits, roots = unit_logits(model, batch)
        root_logits, _ = model(**batch["net_input"], classification_head_name=
                               "sentence_classification_head")
        for row, index in enumerate(batch["id"].tolist()):
            alone, alone_roots = unit_logits(model, dataset.collater([dataset[index]]))
            n = int(batch["net_input"]["src_lengths"][row])
            m = int((batch["net_input"]["src_node_spans"][row, :, 1] > 0).sum())
            width = batch["net_input"]["src_tokens"].size(1)
            assert torch.allclose(alone[0, :n], logits[row, :n], atol=1e-10)
            assert torch.allclose(alone[0, n:n + m], logits[row, width:width + m], atol=1e-10)
            root = int(alone_roots[0])
            assert torch.allclose(root_logits[row], alone[0, root], atol=1e-10)


def perturbations(model, dataset, change):
    """For every test tree with two nodes or more and every position ``k`` that ``change``
    perturbs: which nodes' logits moved. Yields (spans, k, moved)."""
    with torch.no_grad():
        for index in range(len(dataset)):
            sample = dataset.collater([dataset[index]])
            spans = sample["net_input"]["src_node_spans"][0].tolist()
            if len(spans) < 2:
                continue
            base, _ = unit_logits(model, sample)
            width = sample["net_input"]["src_tokens"].size(1)
            for k, net_input in change(sample["net_input"]):
                out, _ = unit_logits(model, {**sample, "net_input": net_input})
                moved = [not torch.allclose(out[0, width + i], base[0, width + i], atol=1e-12)
                         for i in range(len(spans))]
                yield spans, k, moved


@pytest.mark.slow
def test_a_node_reads_only_its_subtree(sst):
    """One layer: a leaf outside node i's span cannot change node i, one inside does. Two
    layers (leaves attend to every leaf, nodes only to their subtree): the label of node t
    reaches node i exactly when t is in i's subtree."""
    task, model = float64_classifier(sst / "bin", "--encoder-layers", "1")
    dictionary = task.source_dictionary
    word_a, word_b = dictionary.index("dull"), dictionary.index("the")

    def leaves(net_input):
        for j in range(int(net_input["src_lengths"][0]) - 1):
            tokens = net_input["src_tokens"].clone()
            tokens[0, j] = word_a if tokens[0, j] != word_a else word_b
            yield j, {**net_input, "src_tokens": tokens}

    checked = 0
    for spans, j, moved in perturbations(model, task.dataset("test"), leaves):
        assert moved == [start <= j < end for start, end in spans], (spans, j)
        checked += len(spans)
    assert checked > 100

    task, model = float64_classifier(sst / "bin")  # a tree input with real node labels
    label_a, label_b = dictionary.index("good"), dictionary.index("film")

    def labels(net_input):
        for t in range(net_input["src_node_labels"].size(1)):
            node_labels = net_input["src_node_labels"].clone()
            node_labels[0, t] = label_a if node_labels[0, t] != label_a else label_b
            yield t, {**net_input, "src_node_labels": node_labels}

    checked = 0
    for spans, t, moved in perturbations(model, task.dataset("test"), labels):
        (s_t, e_t) = spans[t]
        assert moved == [s <= s_t and e_t <= e for s, e in spans], (spans, t)
        checked += len(spans)
    assert checked > 100


def test_class_groups_give_sst2_accuracy_from_five_classes():
    classes = Dictionary()
    for c in CLASSES:
        classes.add_symbol(c)
    group_of = parse_class_groups("0,1/3,4", classes)
    assert group_of.tolist() == [0, 0, -1, 1, 1]
    # argmax class 2 (neutral), but p3 + p4 = 0.5 > p0 + p1 = 0.2: positive.
    probs = torch.tensor([[0.1, 0.1, 0.3, 0.25, 0.25], [0.3, 0.3, 0.0, 0.2, 0.2],
                          [0.2, 0.2, 0.2, 0.2, 0.2]])
    targets = torch.tensor([4, 3, 2])  # the neutral root is not counted
    correct, counted = root_accuracy(probs.log(), targets, group_of)
    assert (int(correct), int(counted)) == (1, 2)
    with pytest.raises(FairseqTreeError, match="'7' is not a class"):
        parse_class_groups("0,1/3,7", classes)


# --------------------------------------------------------------------------- bad input


@pytest.mark.slow
def test_a_label_that_is_not_a_class(tmp_path):
    raw = write_corpus(tmp_path / "raw", seed=4, sizes=(5, 3, 3))
    lines = (raw / "valid").read_text(encoding="utf-8").splitlines()
    lines[1] = "(3 (2 good) (7 film))"
    write_lines(raw / "valid", lines)
    proc = binarize(raw, tmp_path / "bin", check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert re.search(rf"{re.escape(str(raw / 'valid'))}:2: label '7' is not a class of "
                     rf"{re.escape(str(raw / 'classes.txt'))} \(classes: 0 1 2 3 4\)", proc.stderr)
    assert not (tmp_path / "bin/input0").exists() or not any((tmp_path / "bin/input0").iterdir())


def run_train_error(data: Path, *extra) -> str:
    proc = run_cli("fairseq-train", data, *TRAIN, "--max-update", "1", "--criterion",
                   "sentence_prediction", "--save-dir", data.parent / "ck", *extra, check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc.stderr.strip().splitlines()[-1]


@pytest.fixture
def damaged(sst, tmp_path):
    """A copy of the binarized corpus that a test may damage."""
    import shutil

    shutil.copytree(sst / "bin", tmp_path / "bin")
    return tmp_path / "bin"


@pytest.mark.slow
def test_label_and_tree_files_of_different_lengths(sst, damaged):
    labels = (sst / "raw/train.label").read_text(encoding="utf-8").splitlines()[:-1]
    write_lines(damaged.parent / "short.label", labels)
    run_cli("fairseq-preprocess", "--only-source", "--trainpref", damaged.parent / "short.label",
            "--destdir", damaged.parent / "short", "--srcdict", sst / "raw/classes.txt")
    for ext in (".bin", ".idx"):
        (damaged / f"label/train{ext}").write_bytes((damaged.parent / f"short/train{ext}").read_bytes())
    message = run_train_error(damaged)
    assert message == (f"tree_classification: error: {damaged}/label/train: 39 labels but "
                       f"{damaged}/input0/train has 40 trees; label and tree files must have "
                       "the same number of lines")


def test_missing_label_dictionary(damaged):
    (damaged / "label/dict.txt").unlink()
    assert run_train_error(damaged) == (
        f"tree_classification: error: {damaged}/label/dict.txt: missing (binarize one label per "
        "line with fairseq-preprocess --only-source --srcdict CLASSES)")


def test_num_classes_that_disagrees_with_the_label_dictionary(damaged):
    assert run_train_error(damaged, "--num-classes", "3") == (
        f"tree_classification: error: --num-classes 3 disagrees with {damaged}/label/dict.txt, "
        "which lists 5 classes (0 1 2 3 4)")


@pytest.mark.slow
def test_a_label_line_that_is_not_a_class(sst, damaged):
    labels = (sst / "raw/train.label").read_text(encoding="utf-8").splitlines()
    labels[6] = "positive"
    write_lines(damaged.parent / "bad.label", labels)
    run_cli("fairseq-preprocess", "--only-source", "--trainpref", damaged.parent / "bad.label",
            "--destdir", damaged.parent / "bad", "--srcdict", sst / "raw/classes.txt")
    for ext in (".bin", ".idx"):
        (damaged / f"label/train{ext}").write_bytes((damaged.parent / f"bad/train{ext}").read_bytes())
    assert run_train_error(damaged) == (
        f"tree_classification: error: {damaged}/label/train: line 7: the label is not a class "
        "of the label dictionary (it was binarized as <unk>)")
