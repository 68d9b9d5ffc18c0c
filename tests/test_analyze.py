"""fairseq-tree-analyze (the paper's Table 4): the attention shares against a hand computation,
the command line's JSON and pictures, its errors."""

import json

import pytest
import torch
from conftest import run_cli

from fairseq_tree.analysis.attention import analyze, load
from fairseq_tree.modules.tree_attention import TreeCrossAttention, TreeSelfAttention


@pytest.fixture(scope="module")
def uniform(trained):
    """The trained tiny model with every tree attention's query projection zeroed: each query
    then spreads its attention evenly over the keys it may see, which can be counted by hand."""
    data, checkpoint, _ = trained
    model, task = load(str(data), str(checkpoint))
    for module in model.modules():
        if isinstance(module, (TreeCrossAttention, TreeSelfAttention)):
            torch.nn.init.zeros_(module.q_proj.weight)
            torch.nn.init.zeros_(module.q_proj.bias)
    return model, task, analyze(model, task, "test", max_tokens=300)


def by_hand(task) -> dict:
    """Uniform attention, counted from the binarized test split: a target token sees the n
    leaves (EOS included) and m nodes of its source, so it puts m / (n + m) on the nodes and
    1 / (n + m) on EOS; a node query sees the words of its span and the nodes of its subtree."""
    dataset = task.dataset("test")
    names = [s.strip("[]") for s in task.source_dictionary.symbols]
    tokens = nodes = eos = 0.0
    labels = {}
    node_queries = node_share = 0.0
    words = real_nodes = 0
    for i in range(len(dataset)):
        item = dataset[i]
        n, spans, targets = len(item["source"]), item["node_spans"].tolist(), \
            len(item["target"])
        m = len(spans)
        tokens += targets
        nodes += targets * m / (n + m)
        eos += targets / (n + m)
        for label in item["node_labels"].tolist():
            labels[names[label]] = labels.get(names[label], 0) + targets / (n + m)
        for start, end in spans:
            subtree = sum(s >= start and e <= end for s, e in spans)
            node_queries += 1
            node_share += subtree / (end - start + subtree)
        words, real_nodes = words + n - 1, real_nodes + m
    return {"nodes": 100 * nodes / tokens, "eos": 100 * eos / tokens,
            "labels": {label: 100 * mass / tokens for label, mass in labels.items()},
            "encoder_nodes": 100 * node_share / node_queries, "tokens": tokens,
            "words": words, "real_nodes": real_nodes}


@pytest.mark.slow
def test_node_shares_equal_a_hand_computation(uniform):
    model, task, result = uniform
    expected = by_hand(task)
    assert result["target_tokens"] == expected["tokens"]
    assert (result["words"], result["nodes"]) == (expected["words"], expected["real_nodes"])
    decoder, encoder = result["decoder"], result["encoder"]
    assert decoder["nodes"] == pytest.approx(expected["nodes"], abs=1e-6)
    assert decoder["eos"] == pytest.approx(expected["eos"], abs=1e-6)
    assert decoder["nodes"] + decoder["words"] + decoder["eos"] == pytest.approx(100)
    for row in decoder["per_layer"]:
        assert row["nodes"] == pytest.approx(expected["nodes"], abs=1e-6)
    assert len(decoder["per_layer"]) == len(model.decoder.layers)
    for label, share in expected["labels"].items():
        assert decoder["per_label"][label]["attention"] == pytest.approx(share, abs=1e-6)
    assert encoder["nodes"] == pytest.approx(expected["encoder_nodes"], abs=1e-6)
    assert encoder["eos"] == 0  # a node's span holds words only
    assert encoder["queries"] == expected["real_nodes"]


def test_batches_and_the_first_sentences(uniform):
    """The shares do not depend on how the split is batched; --max-sentences reads a prefix."""
    model, task, result = uniform
    again = analyze(model, task, "test", max_tokens=4096)
    assert again["decoder"]["nodes"] == pytest.approx(result["decoder"]["nodes"], abs=1e-9)
    first = analyze(model, task, "test", max_sentences=5)
    assert first["sentences"] == 5
    assert first["target_tokens"] == sum(len(task.dataset("test")[i]["target"]) for i in range(5))


@pytest.mark.slow
def test_command_line_json_and_pictures(trained, tmp_path):
    data, checkpoint, _ = trained
    out = run_cli("fairseq-tree-analyze", data, "--path", checkpoint, "--json",
                  tmp_path / "analysis.json", "--plot", tmp_path / "plots", "--sentence", "2",
                  "--plot-layer", "2")
    result = json.loads((tmp_path / "analysis.json").read_text())
    model, task = load(str(data), str(checkpoint))
    assert result["decoder"]["nodes"] == pytest.approx(
        analyze(model, task, "test")["decoder"]["nodes"], abs=1e-6)
    assert f"nodes {result['decoder']['nodes']:.1f}%" in out.stdout
    assert "paper, Table 4" in out.stdout and result["paper_table_4"]["En-Fr"]["target_to_nodes"]
    for name in ("attention-test-2.png", "node-share-per-layer.png"):
        picture = (tmp_path / "plots" / name).read_bytes()
        assert picture[:8] == b"\x89PNG\r\n\x1a\n" and len(picture) > 10_000


@pytest.mark.slow
def test_clear_errors(trained, tmp_path):
    data, checkpoint, _ = trained
    proc = run_cli("fairseq-tree-analyze", data, "--path", tmp_path / "none.pt", check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f"fairseq-tree-analyze: error: {tmp_path / 'none.pt'}: no such checkpoint")
    proc = run_cli("fairseq-tree-analyze", data, "--path", checkpoint, "--plot", tmp_path / "p",
                   "--sentence", "999", check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "--sentence 999: test has sentences 0..39" in proc.stderr.strip().splitlines()[-1]
