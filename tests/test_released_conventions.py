"""The authors' released code's accumulation conventions (a)-(d), offered as options: each
against a literal reference, the options' plumbing, what they change and what they leave, and a
tree2seq model that trains with all of them."""

import random

import pytest
import torch
from conftest import ROOT, TRAIN, run_cli
from model_helpers import build_model, collate, random_examples, tree_dictionary
from test_hierarchical_accumulation import random_case
from test_tree_hot_path import syncs  # noqa: F401  (the fixture that records device reads)
from tree_reference import (
    literal_accumulation,
    literal_head_accumulation,
    padded_batch,
    random_spans,
)

from fairseq_tree.models.tree2seq_config import TreeAttentionConfig
from fairseq_tree.modules.hierarchical_accumulation import (
    PAPER,
    AccumulationConventions,
    accumulate,
    build_accumulation_plan,
)
from fairseq_tree.modules.source_tree import SourceTree
from fairseq_tree.modules.tree_attention import (
    RELEASED_EMBEDDING_ROWS,
    TreeCrossAttention,
    TreeSelfAttention,
)

OPTIONS = ["released_path_count", "released_depth_index", "released_head_weights",
           "released_embedding_init"]  # (a)-(d)
PLAN_CONVENTIONS = {  # (a), (b), both: the ones that change the plan
    "a": AccumulationConventions(path_count_average=True),
    "b": AccumulationConventions(root_depth_index=True),
    "ab": AccumulationConventions(path_count_average=True, root_depth_index=True),
}


def fast(case, conventions, weights=None):
    rows = None if case["vertical"] is None else (case["vertical"].size(0),
                                                  case["horizontal"].size(0))
    plan = build_accumulation_plan(case["spans"], case["leaves"].size(1), rows, torch.float64,
                                   conventions)
    return accumulate(plan, case["leaves"], case["nodes"],
                      case["leaf_weights"] if weights is None else weights,
                      case["vertical"], case["horizontal"])


@pytest.mark.parametrize("name", list(PLAN_CONVENTIONS))
@pytest.mark.parametrize("embeddings", [False, True], ids=["eq8", "eq10"])
def test_plan_conventions_equal_their_literal_reference(name, embeddings):
    conventions = PLAN_CONVENTIONS[name]
    rng = random.Random(len(name) + 2 * embeddings)
    torch.manual_seed(0)
    changed = 0
    for _ in range(100):
        case = random_case(rng)
        if not embeddings:
            case["vertical"] = case["horizontal"] = None
        literal = literal_accumulation(
            **case, path_count_average=conventions.path_count_average,
            root_depth_index=conventions.root_depth_index)
        torch.testing.assert_close(fast(case, conventions), literal, rtol=0, atol=1e-9)
        changed += not torch.allclose(literal, literal_accumulation(**case))
    if embeddings or "a" in name:  # (b) alone changes only the embeddings' rows
        assert changed > 50


@pytest.mark.parametrize("conventions", [PAPER, PLAN_CONVENTIONS["ab"]], ids=["paper", "ab"])
@pytest.mark.parametrize("embeddings", [False, True], ids=["eq8", "eq10"])
def test_per_head_leaf_weights_equal_their_literal_reference(conventions, embeddings):
    """(c): w = L U + b per head; each head's slice of the values accumulated with its w."""
    rng = random.Random(7 + embeddings)
    torch.manual_seed(1)
    for _ in range(60):
        case = random_case(rng, d=8)
        heads = 2
        weights = torch.randn(*case["leaf_weights"].shape, heads, dtype=torch.float64)
        if embeddings:  # shared by the heads: e = d / heads wide
            case["vertical"], case["horizontal"] = case["vertical"][:, :2], case["horizontal"][:, :2]
        else:
            case["vertical"] = case["horizontal"] = None
        literal = literal_head_accumulation(
            case["leaves"], case["nodes"], case["spans"], weights, case["vertical"],
            case["horizontal"], path_count_average=conventions.path_count_average,
            root_depth_index=conventions.root_depth_index)
        torch.testing.assert_close(fast(case, conventions, weights), literal, rtol=0, atol=1e-9)
        same = weights[..., :1].expand_as(weights)  # equal heads: the one-vector accumulation
        torch.testing.assert_close(fast(case, conventions, same),
                                   fast(case, conventions, same[..., 0]), rtol=0, atol=1e-9)


def test_options_and_the_switch():
    assert TreeAttentionConfig().conventions == PAPER
    assert TreeAttentionConfig(released_accumulation=True).conventions == \
        AccumulationConventions.released()
    for k, name in enumerate(OPTIONS):
        flags = [False] * 4
        flags[k] = True
        assert TreeAttentionConfig(**{name: True}).conventions == AccumulationConventions(*flags)


def attention_modules(model):
    return [m for m in model.modules() if isinstance(m, (TreeSelfAttention, TreeCrossAttention))]


@pytest.mark.parametrize("arch", ["tree2seq_tiny", "tree_classifier_tiny"])
def test_released_parameters_and_initialisation(arch):
    """(c) U (C x heads) and b in every tree attention; (d) 50 depths and 100 ranks in use (51
    and 101 rows with the unused row 0) drawn from N(0, 1); the paper's model keeps one u and
    |E| rows of std head_dim^-0.5. The classifier's encoder takes the same options."""
    torch.manual_seed(0)
    dictionary = tree_dictionary()
    released = build_model(dictionary, arch, released_accumulation=True)
    paper = build_model(dictionary, arch)
    assert RELEASED_EMBEDDING_ROWS == (51, 101)
    assert len(attention_modules(released)) >= 2
    for module in attention_modules(released):
        assert module.conventions == AccumulationConventions.released()
        assert module.leaf_weight.shape == (module.embed_dim, module.num_heads)
        assert module.leaf_bias.shape == (module.num_heads,)
        embedding = module.hierarchical_embedding
        assert embedding.rows == (51, 101)
        assert 0.7 < float(embedding.horizontal.detach().std()) < 1.3
    for module in attention_modules(paper):
        assert module.conventions == PAPER
        assert module.leaf_weight.dim() == 1 and module.leaf_bias is None
        embedding = module.hierarchical_embedding
        assert embedding.rows == (100, 100)
        assert float(embedding.horizontal.detach().std()) < 2 * module.head_dim ** -0.5


def test_released_attention_equals_the_literal_reference():
    """All four in one tree attention: its accumulated node values equal the literal reference
    with w = L U + b per head (written out here) and the module's own (d) tables, on a padded
    batch whose chain is deeper than 50 nodes (its deepest nodes share E^v's last row)."""
    torch.manual_seed(2)
    rng = random.Random(11)
    attention = TreeSelfAttention(8, 2, hier_embed_rows=5,
                                  conventions=AccumulationConventions.released()).double()
    torch.nn.init.normal_(attention.leaf_bias)  # nonzero, so that b is checked too
    n = 54
    chain = [(k, n) for k in range(n - 1)]  # depths 1 to 53
    spans = padded_batch(rng, [chain, random_spans(rng, 9, 1.0), random_spans(rng, 30, 0.7)], n)
    leaf_padding = torch.zeros(3, n, dtype=torch.bool)
    leaf_padding[1, 9:], leaf_padding[2, 30:] = True, True
    tree = SourceTree.from_batch(leaf_padding, spans)
    m = spans.size(1)
    leaf_states, leaf_values = torch.randn(2, n, 3, 8, dtype=torch.float64)
    node_values = torch.randn(m, 3, 8, dtype=torch.float64)
    U, b = attention.leaf_weight.detach(), attention.leaf_bias.detach()
    weights = torch.zeros(3, n, 2, dtype=torch.float64)  # w_bjh = sum_c L_jbc U_ch + b_h
    for j in range(n):
        for h in range(2):
            weights[:, j, h] = (leaf_states[j] * U[:, h]).sum(-1) + b[h]
    embedding = attention.hierarchical_embedding
    literal = literal_head_accumulation(
        leaf_values.transpose(0, 1), node_values.transpose(0, 1), spans, weights,
        embedding.vertical.detach(), embedding.horizontal.detach(),
        path_count_average=True, root_depth_index=True)
    with torch.no_grad():  # the nodes' w count for nothing: large ones show it
        unit_weights = torch.cat([attention.leaf_weights(leaf_states),
                                  1e6 * torch.randn(m, 3, 2, dtype=torch.float64)])
        fast = attention.accumulated_node_values(tree, torch.cat([leaf_values, node_values]),
                                                 unit_weights)
    torch.testing.assert_close(fast.transpose(0, 1), literal, rtol=0, atol=1e-9)
    assert embedding.rows == RELEASED_EMBEDDING_ROWS and len(chain) > 50


def model_outputs(arch: str, seed: int = 0, **options):
    """The output of a freshly built tiny ``arch`` (seeded) on a fixed padded batch, in float64:
    tree2seq's decoder output, the classifier's encoder states of its nodes (its leaves attend
    to leaves alone)."""
    dictionary = tree_dictionary()
    torch.manual_seed(seed)
    model = build_model(dictionary, arch, **options).double().eval()
    net_input = collate(random_examples(random.Random(5), dictionary, 6), dictionary)["net_input"]
    with torch.no_grad():
        if arch.startswith("tree2seq"):
            return model(**net_input)[0]
        return model.encoder(net_input["src_tokens"], net_input["src_lengths"],
                             net_input["src_node_labels"],
                             net_input["src_node_spans"])["encoder_nodes"][0]


# The default path's outputs (``model_outputs(arch)`` of both archs, float64, 7,362 values),
# stored once by ``store_default_outputs`` with the library code of commit 122fe40, torch
# 2.13.0+cpu, fairseq 0.12.3.1, on CPU:
#     cd tests && ../.venv/bin/python -c "import test_released_conventions as t; \
#         t.store_default_outputs()"
# Rerun it only when a change of the default path's outputs is meant. The values are compared
# with atol 1e-12, not bit for bit: the same build gives other last bits with another number of
# threads (tree2seq_tiny differs by up to 1.8e-15 between 1 and 2 threads), and other BLAS
# builds may too; any change of the computation (a convention, a float32 step) is far larger.
DEFAULT_OUTPUTS = ROOT / "tests" / "data" / "released_conventions_default_outputs.pt"


def store_default_outputs():
    torch.set_num_threads(1)
    torch.save({arch: model_outputs(arch).clone()  # not a view of a larger storage
                for arch in ("tree2seq_tiny", "tree_classifier_tiny")}, DEFAULT_OUTPUTS)


@pytest.mark.parametrize("arch", ["tree2seq_tiny", "tree_classifier_tiny"])
def test_every_option_off_is_the_default_path_bit_for_bit(arch):
    """With every option off, the output is the default path's, bit for bit, and both equal the
    stored outputs of the default path (see DEFAULT_OUTPUTS)."""
    off = dict.fromkeys(["released_accumulation", *OPTIONS], False)
    default = model_outputs(arch)
    assert torch.equal(model_outputs(arch, **off), default)
    stored = torch.load(DEFAULT_OUTPUTS)[arch]
    assert stored.dtype == torch.float64 and stored.shape == default.shape
    torch.testing.assert_close(default, stored, rtol=0, atol=1e-12)


@pytest.mark.parametrize("option", ["released_accumulation", *OPTIONS])
@pytest.mark.parametrize("arch", ["tree2seq_tiny", "tree_classifier_tiny"])
def test_every_option_changes_the_output(arch, option):
    paper, released = model_outputs(arch), model_outputs(arch, **{option: True})
    assert paper.shape == released.shape
    assert (paper - released).abs().max() > 1e-4


def test_released_layers_never_wait_for_the_device_in_training(syncs):  # noqa: F811
    """The released conventions keep the hot path as it is: forward and backward of a training
    batch read no device value in any tree layer (see tests/test_tree_hot_path.py)."""
    torch.manual_seed(3)
    dictionary = tree_dictionary()
    model = build_model(dictionary, released_accumulation=True)
    batch = collate(random_examples(random.Random(20), dictionary, 6), dictionary)
    hooks = syncs.watch([*model.encoder.layers, *model.decoder.layers], "layer")
    with syncs:
        model(**batch["net_input"])[0].sum().backward()
    for hook in hooks:
        hook.remove()
    layers = syncs.reads("layer")
    assert len(layers) == len(model.encoder.layers) + len(model.decoder.layers)
    assert list(layers.values()) == [[]] * len(layers)


@pytest.mark.parametrize("name", ["a", "b", "ab", "c", "d", "abcd"])
def test_conventions_change_node_rows_only(name):
    """With the same projections, tree self-attention under any convention gives the leaves the
    same outputs (they attend to leaves only) and the nodes other ones (their values changed).
    (a) and (b) keep every parameter; (c) and (d) reshape u and E, which are drawn anew."""
    conventions = {**PLAN_CONVENTIONS, "c": AccumulationConventions(head_leaf_weights=True),
                   "d": AccumulationConventions(released_embedding_init=True),
                   "abcd": AccumulationConventions.released()}[name]
    torch.manual_seed(0)
    rng = random.Random(3)
    dictionary = tree_dictionary()
    batch = collate(random_examples(rng, dictionary, 6, max_leaves=9), dictionary)["net_input"]
    paper = TreeSelfAttention(16, 4, hier_embed_rows=5).double().eval()
    released = TreeSelfAttention(16, 4, hier_embed_rows=5, conventions=conventions).double().eval()
    own = released.state_dict()
    shared = {k: v for k, v in paper.state_dict().items()
              if own[k].shape == v.shape and not k.startswith("in_proj")}
    assert {"out_proj.weight", "out_proj.bias"} <= set(shared)
    released.load_state_dict(shared, strict=False)
    with torch.no_grad():  # W^Q, W^K, W^V (rows of in_proj_weight), and u where (c) keeps it
        for name in ("q_proj", "k_proj", "v_proj"):
            for part in ("weight", "bias"):
                getattr(getattr(released, name), part).copy_(getattr(getattr(paper, name), part))
        if released.leaf_weight.shape == paper.leaf_weight.shape:
            released.leaf_weight.copy_(paper.leaf_weight)
    leaf_padding = batch["src_tokens"].eq(dictionary.pad())
    n, m = leaf_padding.size(1), batch["src_node_spans"].size(1)
    x = torch.randn(n + m, leaf_padding.size(0), 16, dtype=torch.float64)
    outputs = [attention(x, x, x, SourceTree.from_batch(leaf_padding,
                                                        batch["src_node_spans"].clone()))[0]
               for attention in (paper, released)]
    torch.testing.assert_close(outputs[0][:n], outputs[1][:n], rtol=0, atol=1e-12)
    real = ~SourceTree.from_batch(leaf_padding, batch["src_node_spans"]).node_padding_mask
    differs = (outputs[0][n:] - outputs[1][n:]).abs().amax(-1).transpose(0, 1) > 1e-9
    assert differs[real].float().mean() > 0.3 and not differs[~real].any()


@pytest.mark.slow
def test_tree2seq_trains_with_the_released_conventions(example, tmp_path):
    work, _ = example
    proc = run_cli("fairseq-train", work / "data-bin", *TRAIN, "--released-accumulation",
                   "--max-update", "4", "--log-interval", "1", "--save-dir", tmp_path)
    assert "num_updates 4" in proc.stdout + proc.stderr
    state = torch.load(tmp_path / "checkpoint_last.pt", weights_only=True)
    assert state["cfg"]["model"].released_accumulation
    # U with its bias b in every attention (tree2seq_tiny: 2 encoder, 2 decoder layers): H rows
    # of in_proj_weight and entries of in_proj_bias past W^Q, W^K, W^V (W^K, W^V for the decoder),
    # then zeros up to a multiple of 8
    sizes = {k: v.shape for k, v in state["model"].items() if k.endswith("in_proj_bias")}
    heads, width = 4, state["model"]["encoder.embed_tokens.weight"].size(1)
    assert len(sizes) == 2 + 2
    assert all(size[0] == (2 if ".encoder_attn." in k else 3) * width + heads + (-heads % 8)
               for k, size in sizes.items())
    assert all(torch.isfinite(v).all() for v in state["model"].values())
