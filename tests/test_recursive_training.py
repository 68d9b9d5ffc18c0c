"""Real fairseq runs of the recursive tree classifiers and of sentence pairs: fairseq-train
learns, fairseq-validate prints the accuracy (or SICK-R's mse and Pearson) that the checkpoint
really has; bad inputs stop with one line."""

import re

import numpy as np
import pytest
import torch
from fairseq import checkpoint_utils

from conftest import run_cli
from fairseq_tree.data.score_targets import sparse_distribution
from fairseq_tree.errors import FairseqTreeError
from tagged_corpus import binarize_trees, sentence_pairs, subword_level, word_level
from test_tree_classification import (
    TASK,
    load_task,
    recomputed_accuracy,
    run_train_error,
    sst,  # noqa: F401  (the per-node sentiment corpus fixture)
    validate,
)

COMMON = [*TASK, "--optimizer", "adam", "--lr", "3e-3", "--max-tokens", "2048", "--seed", "1",
          "--log-format", "simple", "--log-interval", "5", "--no-epoch-checkpoints",
          "--dropout", "0.1"]
MULTI_BRANCH = ["--arch", "recursive_multibranch_classifier_tiny"]
TREE_ATTENTION = ["--arch", "recursive_tree_attention_classifier_tiny"]


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    work = tmp_path_factory.mktemp("recursive-runs")
    return {"word": word_level(work / "word"), "subword": subword_level(work / "subword"),
            "pairs": sentence_pairs(work / "pairs"),
            "scores": sentence_pairs(work / "scores", scores=True)}


def train(data, save, *options, updates=40):
    return run_cli("fairseq-train", data, *COMMON, "--max-update", updates, "--save-dir", save,
                   *options)


def same_accuracy(printed, recomputed):
    """fairseq's sentence_prediction prints accuracy to 1 decimal, node_classification to 2."""
    return printed == pytest.approx(recomputed, abs=0.05)


def train_metric(proc, name):
    return [float(x) for x in re.findall(rf"\| train \| .*?\| {name} ([\d.]+)", proc.stdout)]


RUNS = {
    "ctt-frozen-glove": ("word", MULTI_BRANCH + ["--freeze-embeddings"]),
    "dtt": ("word", MULTI_BRANCH + ["--dependency"]),
    "rta": ("subword", TREE_ATTENTION),
}


@pytest.mark.slow
@pytest.mark.parametrize("corpus, options", RUNS.values(), ids=RUNS.keys())
def test_each_encoder_trains_and_validates(corpora, tmp_path, corpus, options):
    data, extra = corpora[corpus], []
    if "--freeze-embeddings" in options:  # 003's setting: frozen GloVe-format vectors
        glove = tmp_path / "glove.txt"
        glove.write_text("".join(f"{w} " + " ".join(f"{np.sin(k * 60 + j):.4f}" for j in range(60))
                                 + "\n" for k, w in enumerate(["good", "dull", "film"])), "utf-8")
        extra = ["--embeddings", glove]
    proc = train(data, tmp_path / "ck", *options, *extra, "--criterion", "sentence_prediction")
    losses = train_metric(proc, "loss")
    assert len(losses) > 5 and losses[-1] < losses[0]
    checkpoint = tmp_path / "ck/checkpoint_last.pt"
    if extra:  # the checkpoint holds the vectors: evaluation does not read the file
        extra[1].unlink()
    assert same_accuracy(validate(data, checkpoint), recomputed_accuracy(data, checkpoint))
    if extra:  # the frozen vectors came through training unchanged
        state = torch.load(checkpoint, weights_only=True)["model"]
        task, _ = load_task(data, *options, "--criterion", "sentence_prediction")
        row = state["encoder.embed_tokens.weight"][task.source_dictionary.index("dull")]
        assert row.tolist() == pytest.approx([float(f"{np.sin(60 + j):.4f}") for j in range(60)])


@pytest.mark.slow
def test_every_node_of_sentiment_trees(sst, tmp_path):  # noqa: F811
    """Per-node targets with a recursive encoder: the leaves are classified from their states
    (the word vectors), the nodes from theirs; accuracy at the root."""
    data = sst / "bin"
    proc = train(data, tmp_path / "ck", *TREE_ATTENTION, "--leaf-encoder", "embeddings",
                 "--node-targets", "--criterion", "node_classification")
    assert train_metric(proc, "loss")[-1] < train_metric(proc, "loss")[0]
    assert "unit_accuracy" in proc.stdout
    checkpoint = tmp_path / "ck/checkpoint_last.pt"
    assert same_accuracy(validate(data, checkpoint), recomputed_accuracy(data, checkpoint))


def logits_on_test(data, checkpoint):
    """The logits of a checkpoint on the whole test split in one batch, and the batch."""
    models, _, task = checkpoint_utils.load_model_ensemble_and_task(
        [str(checkpoint)], arg_overrides={"data": str(data)})
    model = models[0].eval()
    task.load_dataset("test")
    dataset = task.dataset("test")
    sample = dataset.collater([dataset[i] for i in range(len(dataset))])
    with torch.no_grad():
        logits, _ = model(**sample["net_input"], classification_head_name=
                          "sentence_classification_head")
    return logits, sample


@pytest.mark.slow
def test_sentence_pair_classification_with_hierarchical_accumulation(corpora, tmp_path):
    data = corpora["pairs"]
    proc = train(data, tmp_path / "ck", "--arch", "tree_classifier_tiny", "--criterion",
                 "sentence_prediction", updates=60)
    assert train_metric(proc, "loss")[-1] < train_metric(proc, "loss")[0]
    checkpoint = tmp_path / "ck/checkpoint_last.pt"
    logits, sample = logits_on_test(data, checkpoint)
    recomputed = 100.0 * float((logits.argmax(-1) == sample["target"].view(-1)).float().mean())
    assert same_accuracy(validate(data, checkpoint), recomputed)


def recomputed_scores(data, checkpoint):
    """mse and Pearson's r of the expected scores on the test pairs, computed here."""
    logits, sample = logits_on_test(data, checkpoint)
    scores = torch.arange(1.0, 6.0)
    predicted = logits.softmax(-1) @ scores
    gold = sample["target"].float() @ scores
    return float(((predicted - gold) ** 2).mean()), float(np.corrcoef(predicted, gold)[0, 1])


@pytest.mark.slow
def test_sick_r_style_relatedness(corpora, tmp_path):
    """Scores 1..5 as Tai et al.'s sparse distributions, a KL loss; fairseq-validate prints the
    mse and Pearson's r of the expected scores."""
    data = corpora["scores"]
    proc = train(data, tmp_path / "ck", *MULTI_BRANCH, "--criterion", "score_distribution",
                 "--num-classes", "5", updates=60)
    assert train_metric(proc, "mse")[-1] < train_metric(proc, "mse")[0]
    checkpoint = tmp_path / "ck/checkpoint_last.pt"
    out = run_cli("fairseq-validate", data, *TASK, "--valid-subset", "test", "--path",
                  checkpoint, "--batch-size", "5")
    found = re.search(r"valid on 'test' subset .*\| mse ([\d.]+) .*\| pearson (-?[\d.]+)",
                      out.stdout + out.stderr)
    assert found, out.stdout + out.stderr
    mse, pearson = recomputed_scores(data, checkpoint)
    assert float(found.group(1)) == pytest.approx(mse, abs=1e-4)
    assert float(found.group(2)) == pytest.approx(pearson, abs=1e-4)


# --------------------------------------------------------------------------- bad input


@pytest.mark.slow
def test_dependency_variant_without_heads(sst, tmp_path):  # noqa: F811
    message = run_train_error(sst / "bin", *MULTI_BRANCH, "--dependency")
    assert message == (
        f"tree_classification: error: {sst}/bin/input0/valid.heads.{{bin,idx}}: missing: --arch "
        "recursive_multibranch_classifier_tiny reads the leaves' dependency heads (binarize "
        "with fairseq-tree-preprocess --dependency-heads SUFFIX)")


def load_error(data, split, *options) -> str:
    task, cfg = load_task(data, *options)
    task.build_model(cfg.model)
    with pytest.raises(FairseqTreeError) as stop:
        task.load_dataset(split)
    return str(stop.value)


def copy_of(data, tmp_path):
    import shutil

    shutil.copytree(data, tmp_path / "bin")
    return tmp_path / "bin"


def test_pairs_of_different_lengths(corpora, tmp_path):
    data = copy_of(corpora["pairs"], tmp_path)
    raw = corpora["pairs"].parent / "raw"
    short = tmp_path / "short"
    short.mkdir()
    lines = (raw / "test.pair").read_text(encoding="utf-8").splitlines()
    (short / "test").write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    binarize_trees(short, tmp_path / "short-bin", "--srcdict", data / "input0/dict.txt",
                   splits=["test"])
    for part in ("", ".labels", ".spans"):
        for ext in (".bin", ".idx"):
            (data / f"input1/test{part}{ext}").write_bytes(
                (tmp_path / f"short-bin/test{part}{ext}").read_bytes())
    message = load_error(data, "test", *MULTI_BRANCH, "--criterion", "sentence_prediction")
    assert message == (f"tree_classification: error: {data}/input1/test: 11 trees but input0 has "
                       "12; the two sides of sentence pairs must have the same number of lines")


def test_a_second_input_with_another_dictionary(corpora, tmp_path):
    data = copy_of(corpora["pairs"], tmp_path)
    (data / "input1/dict.txt").write_text("other 1\n", encoding="utf-8")
    with pytest.raises(FairseqTreeError) as stop:
        load_task(data, *MULTI_BRANCH, "--criterion", "sentence_prediction")
    assert str(stop.value) == (f"tree_classification: error: {data}/input1/dict.txt differs from "
                               f"{data}/input0/dict.txt: binarize input1 with --srcdict "
                               f"{data}/input0/dict.txt")


def test_a_score_line_that_is_no_distribution(corpora, tmp_path):
    data = copy_of(corpora["scores"], tmp_path)
    path = data / "label/test.label"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[3] = "0 0.5 0.6 0 0"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    message = load_error(data, "test", *MULTI_BRANCH, "--criterion", "score_distribution",
                         "--num-classes", "5")
    assert message == (f"tree_classification: error: {path}:4: not a distribution (values must "
                       "be non-negative and sum to 1; sparse_distribution writes a score's)")


def test_the_roberta_baseline_reads_pairs_and_score_distributions(corpora):
    """--tree-input leaves-only is fairseq's sentence_prediction: the two sides' leaves joined
    (after --init-token, with --separator-token), the K values of each label line as target."""
    data = corpora["scores"]
    task, _ = load_task(data, "--tree-input", "leaves-only", "--arch", "roberta", "--init-token",
                        "0", "--separator-token", "2", "--criterion", "score_distribution",
                        "--num-classes", "5")
    task.load_dataset("test")
    dataset = task.dataset("test")
    sample = dataset.collater([dataset[i] for i in range(len(dataset))])
    lines = (data / "label/test.label").read_text(encoding="utf-8").splitlines()
    expected = torch.tensor([[float(x) for x in line.split()] for line in lines])
    assert torch.equal(sample["target"].float(), expected[sample["id"]])
    first = sample["net_input"]["src_tokens"][0]
    assert int(first[0]) == 0 and int((first == task.source_dictionary.eos()).sum()) == 3


def test_sparse_distribution_of_a_score():
    assert sparse_distribution(3.6, 5) == pytest.approx([0, 0, 0.4, 0.6, 0])
    assert sparse_distribution(5.0, 5) == [0, 0, 0, 0, 1.0]
    assert sparse_distribution(1.0, 5) == [1.0, 0, 0, 0, 0]
    with pytest.raises(ValueError, match="outside"):
        sparse_distribution(5.5, 5)


@pytest.mark.slow
def test_node_targets_of_sentence_pairs(sst, tmp_path):  # noqa: F811
    data = copy_of(sst / "bin", tmp_path)
    (data / "input1").mkdir()
    with pytest.raises(FairseqTreeError) as stop:
        load_task(data, *MULTI_BRANCH, "--node-targets", "--criterion", "node_classification")
    assert str(stop.value) == ("tree_classification: error: --node-targets classifies the nodes "
                               f"of one tree: not sentence pairs ({data}/input1)")


def test_one_real_valued_target_per_line(corpora, tmp_path):
    """--regression-target --num-classes 1 (fairseq's sentence_prediction MSE): one number per
    label line, a line that is none stops the run with its line."""
    data = copy_of(corpora["scores"], tmp_path)
    path = data / "label/test.label"
    scores = [f"{1 + k / 4:.2f}" for k in range(12)]
    path.write_text("\n".join(scores) + "\n", encoding="utf-8")
    options = [*MULTI_BRANCH, "--criterion", "sentence_prediction", "--regression-target",
               "--num-classes", "1"]
    task, cfg = load_task(data, *options)
    task.build_model(cfg.model)
    task.load_dataset("test")
    dataset = task.dataset("test")
    sample = dataset.collater([dataset[i] for i in range(len(dataset))])
    assert sample["target"].view(-1).tolist() == pytest.approx(
        [float(scores[i]) for i in sample["id"].tolist()])
    path.write_text("\n".join(scores[:5] + ["high"] + scores[6:]) + "\n", encoding="utf-8")
    assert load_error(data, "test", *options) == (
        f"tree_classification: error: {path}:6: expected one number, found 'high'")
