"""tree2seq in half precision: no accumulating scatter of the tree path runs on half tensors (the
sums of Eqs. 5-10 are taken in float32 or by matrix products), and the encoder's error in half
against float32 on the same weights."""

import random
from collections import Counter

import pytest
import torch
from model_helpers import build_model, collate, random_examples, tree_dictionary
from tree_reference import padded_batch

from fairseq_tree.modules.hierarchical_accumulation import (
    build_accumulation_plan,
    embedding_weights,
)

from bench import half_precision
from bench.operator_account import OperatorAccount

TINY = dict(encoder_embed_dim=64, encoder_ffn_embed_dim=128, encoder_attention_heads=4,
            encoder_layers=2, decoder_attention_heads=4, decoder_layers=2)  # = tree2seq_tiny
PRECISIONS = {"float16": (torch.float16, None), "bfloat16": (torch.bfloat16, None),
              "amp": (torch.float32, torch.float16)}


@pytest.fixture(scope="module")
def dictionary():
    return tree_dictionary()


def half_scatters(model, net_input: dict, precision: str) -> Counter:
    """(operator, phase, caller) of the accumulating scatters that add into half-precision
    tensors at repeated indices in a forward and backward of ``model``: cast to the precision,
    or in float32 under the CPU's autocast to float16 (``amp``)."""
    dtype, autocast = PRECISIONS[precision]
    model = model.to(dtype)
    if not getattr(model, "reads_trees", False):
        net_input = {k: net_input[k] for k in ("src_tokens", "src_lengths", "prev_output_tokens")}
    account = OperatorAccount()
    with torch.autocast("cpu", dtype=autocast or torch.float16, enabled=autocast is not None):
        with torch.autograd.detect_anomaly(check_nan=False), account:
            model(**net_input)[0].float().logsumexp(-1).sum().backward()
    return Counter((s["operator"], s["phase"], s["caller"]) for s in account.scatters
                   if s["dtype"] in ("float16", "bfloat16") and s["repeated_indices"])


@pytest.mark.parametrize("precision", list(PRECISIONS))
def test_no_scatter_of_the_tree_path_adds_in_half(dictionary, precision):
    """A half model's forward and backward (--fp16, --bf16; --amp as the CPU's autocast): the
    only accumulating scatters into half tensors are the embedding table's backward of each
    lookup, as in fairseq's Transformer of the same size on the same sentences (the tree model
    looks its leaves and node labels up at once); the hierarchical embeddings' scatter adds in
    float32. In float32 the same check does see the accumulation's scatters, so it would see
    them in half."""
    batch = collate(random_examples(random.Random(30), dictionary, 6), dictionary)
    found = {}
    for arch, options in (("tree2seq_tiny", {}), ("transformer", TINY)):
        torch.manual_seed(0)
        found[arch] = half_scatters(build_model(dictionary, arch, **options),
                                    batch["net_input"], precision)
    tree, plain = found["tree2seq_tiny"], found["transformer"]
    kinds = lambda found: Counter((op, phase) for op, phase, _ in found.elements())
    if precision == "amp":  # the CPU's autocast keeps embeddings in float32: nothing in half
        assert tree == plain == Counter()
    else:
        assert kinds(tree) == kinds(plain) == Counter({("embedding_dense_backward", "backward"): 2})
    assert not any(caller.startswith("fairseq_tree/modules/") for _, _, caller in tree)
    torch.manual_seed(0)
    model = build_model(dictionary)
    account = OperatorAccount()
    with torch.autograd.detect_anomaly(check_nan=False), account:
        model(**batch["net_input"])[0].logsumexp(-1).sum().backward()
    accumulation = [s for s in account.scatters if "hierarchical_accumulation" in s["caller"]]
    # forward and backward: one for every encoder layer, one for the decoder's layers together
    assert len(accumulation) == 2 * (len(model.encoder.layers) + 1)
    assert all(s["dtype"] == "float32" and s["repeated_indices"] for s in accumulation)


def test_embedding_weights_sum_half_values_in_float32():
    """gamma from half-precision alpha equals the float64 sums of the same half values to float32
    precision, on trees deeper and wider than the tables (their last rows gather hundreds of
    entries); the same scatter into half precision is off by far more."""
    rng = random.Random(8)
    n = 60
    chain = [(k, n) for k in range(n - 1)]  # depths 1 to 59
    spans = padded_batch(rng, [chain, chain[::3], [(0, n), (0, 30), (30, n)]], n)
    plan = build_accumulation_plan(spans, n, (5, 4), torch.float16)
    weights = torch.rand(3, 1, 1, n + spans.size(1), dtype=torch.float64)
    alpha = (weights * plan.unit_scale.double().unsqueeze(1)).half()
    index = plan.embedding_index
    gamma = embedding_weights(alpha, index)
    exact = embedding_weights(alpha.double(), index)
    assert gamma.dtype == torch.float32
    assert (Counter(index.target.tolist()).most_common(1)[0][1]) > 200
    relative = lambda x: float((x.double() - exact).abs().max() / exact.abs().max())
    assert relative(gamma) < 1e-6
    in_half = alpha.new_zeros(exact.numel()).index_add_(
        0, index.target, alpha.permute(0, 2, 3, 1).reshape(-1)[index.source])
    assert relative(in_half.view_as(exact)) > 1e-4


def test_encoder_error_in_half_against_float32(tmp_path):
    """The measurement of bench/half_precision.py at the tiny size, on the Bible sample: in half
    the tree encoder's leaves are no less precise than fairseq's Transformer encoder's (their
    error within 5%), and the accumulation's own arithmetic adds under 2% to the nodes' error
    (against the accumulation in float64 from the same half values)."""
    sizes = ("--encoder-embed-dim 64 --encoder-ffn-embed-dim 128 --encoder-attention-heads 4 "
             "--encoder-layers 2 --decoder-embed-dim 64 --decoder-ffn-embed-dim 128 "
             "--decoder-attention-heads 4 --decoder-layers 2")
    report = half_precision.main([
        "--archs", "tree2seq_tiny", "transformer", "--train-args", sizes, "--seeds", "1", "2",
        "--batches", "2", "--device", "cpu", "--json", str(tmp_path / "half.json")])
    assert set(report["results"]) == {"float16", "bfloat16", "amp"}
    for precision, cell in report["results"].items():
        tree, plain = cell["tree2seq"], cell["transformer"]
        assert 0 < tree["leaves"]["mean"] <= 1.05 * plain["leaves"]["mean"], precision
        assert tree["nodes"]["mean"] <= 1.02 * tree["nodes, exact accumulation"]["mean"], precision
        assert len(tree["seeds"]) == len(plain["seeds"]) == 2
