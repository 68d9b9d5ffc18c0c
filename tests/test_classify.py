"""Classifying raw text (``classification_hub.predict`` and fairseq-tree-classify) on the
classification recipes' own data: the agreement recipe made from the stand-in Bibles by the
stand-in spaCy pipeline (its tokenizer, its parser, BPE, the dependency heads), and the snippets
recipe (Moses tokens, two views). Each model, trained a few updates, must give from the raw
examples what it gives on their binarized form through fairseq's task and criterion: the same
class and the same probabilities, example by example, and fairseq-validate's accuracy."""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from conftest import PLUGIN_DIR, ROOT, run_cli, write_lines
from fairseq_tree.classification_hub import ClassificationInputError, from_pretrained
from fairseq_tree.errors import FairseqTreeError

import classification_standins as standins
from prepare_classification import raw_text_steps  # (what an SVA recipe records)

TRAIN = ["--user-dir", PLUGIN_DIR, "--task", "tree_classification", "--optimizer", "adam",
         "--lr", "0.003", "--criterion", "sentence_prediction", "--max-update", "6", "--seed", "1",
         "--num-workers", "0", "--max-tokens", "2048", "--no-epoch-checkpoints",
         "--disable-validation", "--log-format", "simple"]
MODELS = {  # the classification configs' models, tiny: roberta on the leaves, DTT on the trees
    "roberta": ["--tree-input", "leaves-only", "--init-token", "0", "--arch", "roberta",
                "--encoder-layers", "2", "--encoder-embed-dim", "64",
                "--encoder-ffn-embed-dim", "128", "--encoder-attention-heads", "4"],
    "dtt": ["--arch", "recursive_multibranch_classifier_tiny", "--dependency"],
}
TREE_CLASSIFIER = ["--arch", "tree_classifier_tiny"]
AGREEMENT_CLASSES = ["singular (VBZ)", "plural (VBP)"]


def run_recipe(name: str, data: Path, **env):
    env = {**os.environ, "DATA": str(data), "WORKERS": "1", "FAIRSEQ_TREE_VENV": sys.prefix,
           "PYTHONWARNINGS": "ignore", **env}
    proc = subprocess.run(["bash", str(ROOT / "data-prep" / f"prepare-{name}.sh")],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]


def train(data_bin: Path, save_dir: Path, model: list) -> Path:
    run_cli("fairseq-train", data_bin, *TRAIN, *model, "--save-dir", save_dir)
    return save_dir / "checkpoint_last.pt"


def read(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def agreement(tmp_path_factory):
    """The agreement recipe's folder (spaCy's trees and heads, BPE) and a checkpoint of each
    model trained on it."""
    pytest.importorskip("spacy")
    root = tmp_path_factory.mktemp("agreement")
    pipeline = standins.agreement_pipeline(root / "agreement_en")
    other = write_lines(root / "other.txt", ["The keys to the cabinet are lost.",
                                             "The author laughs."])
    run_recipe("agreement", root / "data", PARSER="spacy", SPACY_MODEL=str(pipeline),
               BIBLE_DIR=str(standins.agreement_bible(root / "bible")), AGREEMENT_CODES="4,3",
               AGREEMENT_SPLIT="50:25:25", TEST_TEXT=str(other))
    work = root / "data" / "agreement"
    return work, {name: train(work / "data-bin" / "agreement", root / "ckpt" / name, flags)
                  for name, flags in MODELS.items()}


def splits(work: Path, view: str) -> list[str]:
    """The view's splits that hold examples."""
    sizes = json.loads((work / "recipe.json").read_text())["views"][view]["sizes"]
    return [split for split, size in sizes.items() if size]


@torch.no_grad()
def binarized_probabilities(checkpoint: Path, data_bin: Path, split: str) -> list[list[float]]:
    """Each example's class probabilities as fairseq-validate's criterion computes them: the
    checkpoint's task loads the binarized split and batches it, the model classifies."""
    from fairseq import checkpoint_utils, utils

    (model,), _, task = checkpoint_utils.load_model_ensemble_and_task(
        [str(checkpoint)], arg_overrides={"data": str(data_bin)})
    model.eval()
    task.load_dataset(split)
    dataset = task.dataset(split)
    batches = task.get_batch_iterator(
        dataset=dataset, max_tokens=8192, seed=1, num_workers=0,
        max_positions=utils.resolve_max_positions(task.max_positions(), model.max_positions()),
    ).next_epoch_itr(shuffle=False)
    found = [None] * len(dataset)
    for sample in batches:
        logits, _ = model(**sample["net_input"], features_only=True,
                          classification_head_name=task.cfg.classification_head_name)
        for index, row in zip(sample["id"].tolist(), F.softmax(logits.float(), -1).tolist()):
            found[index] = row
    assert None not in found
    return found


def assert_same(predictions, expected: list[list[float]]):
    """The predictions are the expected distributions' argmax, with their probabilities."""
    assert len(predictions) == len(expected)
    for prediction, probs in zip(predictions, expected):
        assert prediction.label == str(max(range(len(probs)), key=probs.__getitem__))
        assert list(prediction.probabilities.values()) == pytest.approx(probs, abs=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("model", list(MODELS))
def test_predict_from_raw_text_equals_the_binarized_examples(agreement, model):
    """The recipe's raw prefixes (spaCy's tokenizer, the stand-in pipeline's parse, BPE; DTT
    the parse's heads over the pieces, roberta the leaves) give the model's outputs on the
    binarized examples of every split; bracketed trees (the recipe's word-level trees) too."""
    work, checkpoints = agreement
    hub = from_pretrained(str(checkpoints[model].parent), checkpoints[model].name,
                          recipe=str(work))
    labels = set()
    for split in splits(work, "agreement"):
        expected = binarized_probabilities(checkpoints[model], work / "data-bin" / "agreement",
                                           split)
        predictions = hub.predict(read(work / "text" / f"{split}.tok"))
        assert_same(predictions, expected)
        assert all(p.name == AGREEMENT_CLASSES[int(p.label)] for p in predictions)
        labels |= {p.label for p in predictions}
        if model != "dtt":  # trees give no dependency heads
            assert hub.predict(read(work / "trees" / split), trees=True) == predictions
    assert labels == {"0", "1"}  # the model's output depends on its input
    assert hub.flat_fallbacks == 0
    assert hub.predict("The keys to the cabinet").label in ("0", "1")  # one sentence


def printed_accuracies(log: str) -> dict[str, float]:
    """The accuracy fairseq-validate printed for each subset (``--log-format json``: one record
    a subset, its keys prefixed with the subset's name)."""
    found = {}
    for line in log.splitlines():
        try:
            record = json.loads(line[line.index("{"):])
        except ValueError:
            continue
        found.update({key[:-len("_accuracy")]: float(value) for key, value in record.items()
                      if key.endswith("_accuracy")})
    return found


@pytest.mark.slow
def test_accuracy_is_fairseq_validates(agreement):
    """fairseq-validate's printed accuracy of every split is that of predict()'s classes."""
    work, checkpoints = agreement
    names = splits(work, "agreement")
    proc = run_cli("fairseq-validate", work / "data-bin" / "agreement", "--user-dir",
                   PLUGIN_DIR, "--task", "tree_classification", "--path",
                   checkpoints["roberta"], "--valid-subset", ",".join(names), "--max-tokens",
                   "8192", "--num-workers", "0", "--log-format", "json")
    printed = printed_accuracies(proc.stdout + proc.stderr)
    hub = from_pretrained(str(checkpoints["roberta"].parent), checkpoints["roberta"].name,
                          recipe=str(work))
    for split in names:
        gold = read(work / "views" / "agreement" / f"{split}.label")
        guesses = [p.label for p in hub.predict(read(work / "text" / f"{split}.tok"))]
        right = sum(guess == label for guess, label in zip(guesses, gold, strict=True))
        assert printed[split] == pytest.approx(100 * right / len(gold), abs=0.05), split


def classify(checkpoint: Path, *args, check=True):
    return run_cli("fairseq-tree-classify", "--path", checkpoint, "--cpu", *args, check=check)


def output(predictions, symbols=False) -> list[str]:
    return [f"{p.label if symbols else p.name}\t{p.probability:.6f}" for p in predictions]


@pytest.mark.slow
def test_cli_reads_the_recipe(agreement, tmp_path):
    """fairseq-tree-classify --recipe on raw lines (DTT: the spaCy parse's heads), and with
    --trees and no recipe (roberta): one line each, the class (the recipe's name for it, or
    its symbol) and its probability (or every class's), as predict() gives them."""
    work, checkpoints = agreement
    raw = read(work / "text" / "valid.tok")
    hub = from_pretrained(str(checkpoints["dtt"].parent), checkpoints["dtt"].name,
                          recipe=str(work))
    predictions = hub.predict(raw)
    proc = classify(checkpoints["dtt"], "--recipe", work,
                    "--input", write_lines(tmp_path / "raw.txt", raw))
    assert proc.stdout.splitlines() == output(predictions)
    assert {line.split("\t")[0] for line in proc.stdout.splitlines()} <= {
        "singular (VBZ)", "plural (VBP)"}
    assert f"{len(raw)} lines classified, 0 parsed as flat fallback trees" in proc.stderr
    proc = classify(checkpoints["dtt"], "--recipe", work, "--symbols",
                    "--input", tmp_path / "raw.txt")
    assert proc.stdout.splitlines() == output(predictions, symbols=True)
    trees = read(work / "trees" / "valid")
    proc = classify(checkpoints["roberta"], work / "data-bin" / "agreement", "--trees",
                    "--bpe-codes", work / "bpe" / "codes", "--probabilities",
                    "--input", write_lines(tmp_path / "trees.txt", trees))
    hub = from_pretrained(str(checkpoints["roberta"].parent), "checkpoint_last.pt",
                          recipe=str(work))
    assert proc.stdout.splitlines() == [
        "\t".join([p.label, *(f"{x:.6f}" for x in p.probabilities.values())])
        for p in hub.predict(raw)]


@pytest.mark.slow
def test_inputs_it_cannot_classify(agreement, tmp_path):
    """One line naming the input: an empty line, a tree that does not parse, trees for a model
    that reads dependency heads, a pair for a single-sentence model; and a recipe whose spaCy
    pipeline is not installed, named before any input is read."""
    work, checkpoints = agreement
    lines = write_lines(tmp_path / "raw.txt", ["The author", "", "The keys"])
    proc = classify(checkpoints["roberta"], "--recipe", work, "--input", lines, check=False)
    assert proc.returncode == 1 and proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1] == \
        f"fairseq-tree-classify: error: {lines}:2: empty: nothing to classify"
    trees = write_lines(tmp_path / "trees.txt", ["(X (DT The) (NN author))", "(X (DT The"])
    proc = classify(checkpoints["roberta"], "--recipe", work, "--trees", "--input", trees,
                    check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1] == f"fairseq-tree-classify: error: {trees}:2: " \
        "malformed tree: unbalanced brackets: 2 unclosed '('"

    hub = from_pretrained(str(checkpoints["dtt"].parent), "checkpoint_last.pt",
                          recipe=str(work))
    with pytest.raises(ClassificationInputError, match=r"^line 4: --arch "
                       r"recursive_multibranch_classifier_tiny reads dependency heads"):
        hub.predict(["(X (DT The) (NN author))"], trees=True, names=["line 4"])
    with pytest.raises(ClassificationInputError, match=r"sentences\[1\]: the model classifies "
                       "single sentences, not pairs"):
        hub.predict(["The author", ("The author", "The keys")])

    moved = tmp_path / "agreement"  # the recipe, its spaCy pipeline missing
    moved.mkdir()
    for name in ("data-bin", "bpe"):
        (moved / name).symlink_to(work / name)
    record = json.loads((work / "recipe.json").read_text())
    record["spacy"]["model"] = "en_no_such_pipeline"
    (moved / "recipe.json").write_text(json.dumps(record))
    proc = classify(checkpoints["roberta"], "--recipe", moved, "--input", lines, check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1].startswith(
        "fairseq-tree-classify: error: spaCy model 'en_no_such_pipeline' is not installed")


@pytest.mark.slow
def test_snippets_in_moses_tokens_and_the_view_trained_on(tmp_path):
    """The snippets recipe (flat trees; two views) and tree_classifier: the raw snippets,
    Moses-tokenized with punctuation normalization as the recipe did, give the binarized
    examples' outputs; the view is the one the checkpoint was trained on (2-class), its class
    names the recipe's."""
    standin = standins.rt_snippets(tmp_path / "standin")
    run_recipe("rt-snippets", tmp_path / "data", PARSER="flat",
               RT_DIR=str(standin["sdist"].parent))
    work = tmp_path / "data" / "rt-snippets"
    checkpoint = train(work / "data-bin" / "2-class", tmp_path / "ckpt", TREE_CLASSIFIER)
    hub = from_pretrained(str(checkpoint.parent), checkpoint.name, recipe=str(work))
    raw = {s["text"].replace(" ", ""): s["text"] for s in standin["snippets"]}
    for split in ("valid", "test"):
        rows = zip(read(work / "text" / f"{split}.tok"), read(work / "text" / f"{split}.label"))
        texts = [raw[tokens.replace(" ", "")] for tokens, label in rows if label != "2"]
        assert any(text.endswith(".") and not text.endswith(" .") for text in texts)  # raw
        predictions = hub.predict(texts)
        assert_same(predictions, binarized_probabilities(checkpoint, work / "data-bin" / "2-class",
                                                         split))
        assert {p.name for p in predictions} <= {"negative", "positive"}
    with pytest.raises(FairseqTreeError, match=r"view 'sst5' is not one of its views "
                       r"\(5-class, 2-class\)"):
        from_pretrained(str(checkpoint.parent), checkpoint.name, recipe=str(work), view="sst5")


@pytest.mark.slow
def test_a_recipe_without_raw_text(agreement, tmp_path):
    """A recipe whose leaves are not raw text's (SVA) classifies trees and refuses raw text in
    one line."""
    work, checkpoints = agreement
    folder = tmp_path / "sva"
    shutil.copytree(work, folder, symlinks=True,
                    ignore=shutil.ignore_patterns("orig", "text", "parsed", "views"))
    record = json.loads((folder / "recipe.json").read_text())
    _, refused = raw_text_steps(argparse.Namespace(dataset="sva", parser="spacy", bpe_merges=0))
    (folder / "recipe.json").write_text(json.dumps({**record, "dataset": "sva",
                                                    "raw_text_refused": refused}))
    hub = from_pretrained(str(checkpoints["roberta"].parent), "checkpoint_last.pt",
                          recipe=str(folder))
    assert hub.predict(["(X (DT The) (NN author))"], trees=True)[0].label in ("0", "1")
    with pytest.raises(ClassificationInputError, match="a sva recipe's leaves are not the "
                       r"tokens of raw text\): give bracketed trees"):
        hub.predict(["The author"])
