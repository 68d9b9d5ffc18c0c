"""The tree2seq model in-process: subtree masking, batch invariance, gradients, cached decoding,
precision, parameter overhead."""

import random

import pytest
import torch
from fairseq.sequence_generator import SequenceGenerator

from fairseq_tree.models import tree_decoder
from fairseq_tree.modules.source_tree import SourceTree
from fairseq_tree.modules.tree_attention import (
    HierarchicalEmbedding,
    TreeAttentionBase,
    TreeCrossAttention,
)
from model_helpers import (
    build_model, collate, count_memory_builds, random_examples, tree_dictionary,
)
from tree_reference import literal_self_attention_visibility, padded_batch, random_spans


@pytest.fixture(scope="module")
def dictionary():
    return tree_dictionary()


def float64_model(dictionary, **options):
    torch.manual_seed(0)
    return build_model(dictionary, **options).double().eval()


@pytest.mark.parametrize("subtree_masking", [True, False])
def test_self_attention_mask_matches_its_definition(subtree_masking):
    rng = random.Random(10)
    for _ in range(40):
        n = rng.randint(1, 10)
        trees = [random_spans(rng, rng.randint(1, n), 0.8) for _ in range(3)]
        spans = padded_batch(rng, trees, n)
        leaf_padding = torch.rand(3, n) < 0.2
        mask = SourceTree.from_batch(leaf_padding, spans).self_attention_mask(subtree_masking)
        expected = literal_self_attention_visibility(spans, leaf_padding, subtree_masking)
        assert torch.equal(mask.squeeze(1), expected)


def encode(model, batch):
    net = dict(batch["net_input"])
    del net["prev_output_tokens"]
    return model.encoder(**net)


def test_nodes_see_only_their_subtree_and_leaves_only_leaves(dictionary):
    """Through every encoder layer: changing the label of node t changes the output of node i only
    if t is in i's subtree, and never changes a leaf; without subtree masking it reaches all."""
    rng = random.Random(11)
    examples = [e for e in random_examples(rng, dictionary, 30) if len(e[2]) >= 3][:4]
    for no_subtree_mask in (False, True):
        model = float64_model(dictionary, no_subtree_mask=no_subtree_mask)
        for example in examples:
            batch = collate([example], dictionary)
            base = encode(model, batch)
            spans = batch["net_input"]["src_node_spans"][0].tolist()
            for t in range(len(spans)):
                changed = {**batch, "net_input": dict(batch["net_input"])}
                labels = changed["net_input"]["src_node_labels"].clone()
                labels[0, t] = dictionary.index("w3")  # any other embedding
                changed["net_input"]["src_node_labels"] = labels
                out = encode(model, changed)
                torch.testing.assert_close(out["encoder_out"][0], base["encoder_out"][0], rtol=0, atol=0)
                moved = (out["encoder_nodes"][0] - base["encoder_nodes"][0]).abs().amax(dim=(1, 2)) > 1e-9
                for i, (start, end) in enumerate(spans):
                    inside = start <= spans[t][0] and spans[t][1] <= end
                    assert bool(moved[i]) == (inside or no_subtree_mask), (example, t, i)


def test_padded_batch_equals_one_sentence_batches(dictionary):
    """Encoder leaves and nodes, and the decoder's log-probabilities, of every sentence are the
    same alone and in a left-padded batch with padded nodes."""
    rng = random.Random(12)
    model = float64_model(dictionary)
    examples = random_examples(rng, dictionary, 8)
    batch = collate(examples, dictionary)
    together = encode(model, batch)
    log_probs = model.get_normalized_probs(model(**batch["net_input"]), log_probs=True)
    for row, example in enumerate(examples):
        one = collate([example], dictionary)
        alone = encode(model, one)
        n, m = len(example[0]), len(example[1])
        torch.testing.assert_close(together["encoder_out"][0][-n:, row], alone["encoder_out"][0][:, 0],
                                   rtol=0, atol=1e-10)
        real_nodes = ~together["encoder_node_padding_mask"][0][row]
        assert int(real_nodes.sum()) == m
        torch.testing.assert_close(together["encoder_nodes"][0][real_nodes.nonzero()[:, 0], row],
                                   alone["encoder_nodes"][0][:, 0], rtol=0, atol=1e-10)
        single = model.get_normalized_probs(model(**one["net_input"]), log_probs=True)
        length = len(example[3])
        torch.testing.assert_close(log_probs[row, :length], single[0], rtol=0, atol=1e-10)


def test_gradients_reach_every_tree_parameter(dictionary):
    rng = random.Random(13)
    torch.manual_seed(1)
    model = build_model(dictionary)
    batch = collate(random_examples(rng, dictionary, 6), dictionary)
    log_probs = model.get_normalized_probs(model(**batch["net_input"]), log_probs=True)
    loss = -log_probs.gather(-1, batch["target"].unsqueeze(-1)).sum()
    loss.backward()
    attentions = {name: m for name, m in model.named_modules()
                  if isinstance(m, TreeAttentionBase)}
    # u_s in each of 2 encoder layers, u_c in each of 2 decoder layers (rows of in_proj_weight),
    # and the table [E^v; E^h] of each
    assert sum(name.startswith("encoder.") for name in attentions) == 2
    assert sum(name.startswith("decoder.") for name in attentions) == 2
    for name, attention in attentions.items():
        grad = attention.in_proj_weight.grad
        assert grad[attention.leaf_rows].abs().sum() > 0, name
        assert grad[attention.leaf_rows.stop:].eq(0).all(), name  # the zero rows: never read
        assert attention.hierarchical_embedding.weight.grad.abs().sum() > 0, name
    for module in model.modules():
        if isinstance(module, HierarchicalEmbedding):  # both tables of the one parameter
            vertical, horizontal = module.weight.grad
            assert vertical.abs().sum() > 0 and horizontal.abs().sum() > 0
    labels = batch["net_input"]["src_node_labels"]
    label_rows = model.encoder.embed_tokens.weight.grad[labels[labels.ne(dictionary.pad())]]
    assert label_rows.abs().sum(dim=1).gt(0).all()


def test_ablation_switches_remove_what_they_name(dictionary):
    plain = build_model(dictionary, no_hier_embed=True)
    assert not [n for n, _ in plain.named_parameters() if "hierarchical_embedding" in n]
    small = build_model(dictionary, hier_embed_size=7)
    assert small.encoder.layers[0].self_attn.hierarchical_embedding.vertical.shape == (7, 8)
    with pytest.raises(ValueError, match="--hier-embed-size must be at least 2"):
        build_model(dictionary, hier_embed_size=1)


def test_activation_checkpointing_is_refused_clearly(dictionary):
    with pytest.raises(ValueError, match="--checkpoint-activations"):
        build_model(dictionary, checkpoint_activations=True)


def test_a_batch_without_trees_is_a_clear_error(dictionary):
    model = build_model(dictionary)
    batch = collate(random_examples(random.Random(14), dictionary, 2), dictionary)
    with pytest.raises(ValueError, match="--tree-input tree"):
        model.encoder(batch["net_input"]["src_tokens"], batch["net_input"]["src_lengths"])


def test_cached_beam_search_equals_recomputation(dictionary, monkeypatch):
    """Beam search with the incremental cache (keys, values and accumulated nodes computed once,
    reordered with the beams) gives the hypotheses of recomputing everything at every step."""
    rng = random.Random(15)
    model = float64_model(dictionary)
    batch = collate(random_examples(rng, dictionary, 5), dictionary)
    results = {}
    for cached in (True, False):
        calls = count_memory_builds(monkeypatch)
        generator = SequenceGenerator([model], dictionary, beam_size=4, max_len_b=12)
        generator.model.has_incremental = cached
        hypotheses = generator.generate([model], batch)
        results[cached] = [[(h["tokens"].tolist(), float(h["score"])) for h in hyps]
                           for hyps in hypotheses]
        steps = max(len(h["tokens"]) for hyps in hypotheses for h in hyps)
        layers = len(model.decoder.layers)
        if cached:
            assert len(calls) == layers  # once per layer for the whole search
        else:
            assert len(calls) >= layers * (steps - 1)
    for with_cache, without in zip(results[True], results[False]):
        assert [tokens for tokens, _ in with_cache] == [tokens for tokens, _ in without]
        for (_, a), (_, b) in zip(with_cache, without):
            assert a == pytest.approx(b, rel=1e-6)  # the generator keeps scores in float32


def test_reordered_cache_equals_recomputation_on_the_reordered_batch(dictionary):
    """reorder_incremental_state / reorder_encoder_out move every tree tensor with the batch: a
    step after reordering (rows permuted and repeated, as beam search does) equals the decoder
    run from scratch on the reordered batch."""
    model = float64_model(dictionary)
    batch = collate(random_examples(random.Random(18), dictionary, 4), dictionary)
    encoder_out = encode(model, batch)
    prefix = torch.randint(dictionary.nspecial, 20, (4, 3))  # no padding, as in beam search
    prefix[:, 0] = dictionary.eos()
    state = {}
    for step in range(1, 3):
        model.decoder(prefix[:, :step], encoder_out=encoder_out, incremental_state=state)
    new_order = torch.tensor([3, 1, 1, 0, 2])
    model.decoder.reorder_incremental_state_scripting(state, new_order)
    reordered = model.encoder.reorder_encoder_out(encoder_out, new_order)
    step_logits, _ = model.decoder(prefix[new_order], encoder_out=reordered, incremental_state=state)
    full_logits, _ = model.decoder(prefix[new_order], encoder_out=reordered)
    # fairseq's decoder self-attention takes its softmax in float32 even for a float64 model, so
    # incremental and full decoding differ by ~1e-7 (fairseq's own Transformer too).
    torch.testing.assert_close(step_logits[:, -1], full_logits[:, -1], rtol=0, atol=1e-6)
    fresh = encode(model, {"net_input": {k: v[new_order] for k, v in batch["net_input"].items()
                                         if k != "src_embedding_paths"}})  # rows of the batch
    for key in ("encoder_out", "encoder_nodes"):
        torch.testing.assert_close(reordered[key][0], fresh[key][0], rtol=0, atol=1e-10)


def test_reorder_within_beam_copies_keeps_the_cached_memory(dictionary):
    """Beam search reorders rows among the copies of one sentence while the batch keeps its
    size: the cache is left as it is (as fairseq's own attention does), and the next step still
    equals the decoder run from scratch on the reordered batch."""
    model = float64_model(dictionary)
    a, b = random_examples(random.Random(19), dictionary, 2)
    batch = collate([a, a, b, b], dictionary)  # two sentences, two beam copies each
    encoder_out = encode(model, batch)
    prefix = torch.randint(dictionary.nspecial, 20, (4, 3))
    prefix[:, 0] = dictionary.eos()
    state = {}
    for step in range(1, 3):
        model.decoder(prefix[:, :step], encoder_out=encoder_out, incremental_state=state)
    memory = [layer.encoder_attn._get_input_buffer(state)["prev_key"]
              for layer in model.decoder.layers]
    new_order = torch.tensor([1, 1, 3, 2])
    model.decoder.reorder_incremental_state_scripting(state, new_order)
    for layer, before in zip(model.decoder.layers, memory):
        assert layer.encoder_attn._get_input_buffer(state)["prev_key"] is before
    reordered = model.encoder.reorder_encoder_out(encoder_out, new_order)
    step_logits, _ = model.decoder(prefix[new_order], encoder_out=reordered, incremental_state=state)
    full_logits, _ = model.decoder(prefix[new_order], encoder_out=reordered)
    torch.testing.assert_close(step_logits[:, -1], full_logits[:, -1], rtol=0, atol=1e-6)


def test_alignment_attention_indexes_source_tokens(dictionary):
    model = float64_model(dictionary)
    batch = collate(random_examples(random.Random(16), dictionary, 3), dictionary)
    _, extra = model(**batch["net_input"])
    attention = extra["attn"][0]  # B x T_target x N, over the leaves only
    assert attention.shape[-1] == batch["net_input"]["src_tokens"].size(1)
    padding = batch["net_input"]["src_tokens"].eq(dictionary.pad())
    assert attention.masked_select(padding.unsqueeze(1)).abs().max() == 0


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_forward_and_backward(dictionary, dtype):
    """What --fp16 / --bf16 run: the model in half precision stays finite and close to float32."""
    torch.manual_seed(2)
    model = build_model(dictionary)
    batch = collate(random_examples(random.Random(17), dictionary, 4), dictionary)
    reference = model.get_normalized_probs(model(**batch["net_input"]), log_probs=False)
    model = model.to(dtype)
    probs = model.get_normalized_probs(model(**batch["net_input"]), log_probs=False)
    assert probs.dtype == torch.float32  # fairseq normalises in float32
    assert torch.isfinite(probs).all()
    torch.testing.assert_close(probs, reference, rtol=0, atol=0.02)
    probs.log().mean().backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is None or torch.isfinite(parameter.grad).all(), name


def test_parameter_overhead_over_the_transformer(dictionary):
    """tree2seq_wmt_en_de adds, per encoder and per decoder layer, u (d) and E^v, E^h
    (|E| x d_head/2 each) to transformer_wmt_en_de on the same vocabulary: about 0.1%
    (Table 5 of the paper). The zero rows that align u's product are not counted: no output
    reads them, so they never train."""
    from fairseq.data import Dictionary

    vocabulary = Dictionary()
    for i in range(32000):
        vocabulary.add_symbol(f"w{i}")
    count = lambda model: sum(p.numel() for p in model.parameters())  # noqa: E731
    tree_model = build_model(vocabulary, arch="tree2seq_wmt_en_de")
    zero_rows = sum(m.zero_row_parameters for m in tree_model.modules()
                    if isinstance(m, TreeAttentionBase))
    assert zero_rows == (6 + 6) * 7 * 512  # the paper's u: one row, then 7 zero rows of d
    tree = count(tree_model) - zero_rows
    transformer = count(build_model(vocabulary, arch="transformer_wmt_en_de"))
    d, head_dim, rows, layers = 512, 512 // 8, 100, 6 + 6
    assert tree - transformer == layers * (d + 2 * rows * head_dim // 2)
    assert (tree - transformer) / transformer < 0.0015


def test_batch_without_nodes_trains_and_translates():
    """One-word sentences have no nodes: a batch of them is M = 0 in the encoder, the
    accumulation and cross-attention, in training and in beam search."""
    dictionary = tree_dictionary()
    torch.manual_seed(5)
    model = build_model(dictionary)
    words = [dictionary.index(f"w{i}") for i in range(3)]
    batch = collate([([w, dictionary.eos()], [], [], [w, dictionary.eos()]) for w in words],
                    dictionary)
    assert batch["net_input"]["src_node_spans"].size(1) == 0
    logits, _ = model(**batch["net_input"])
    assert torch.isfinite(logits).all()
    logits.sum().backward()
    generator = SequenceGenerator([model.eval()], dictionary, beam_size=2, max_len_b=3)
    hypotheses = generator.forward({"net_input": batch["net_input"]})
    assert len(hypotheses) == len(words) and all(len(h) == 2 for h in hypotheses)


@pytest.mark.parametrize("options", [{}, {"no_hier_embed": True},
                                     {"released_accumulation": True},
                                     {"cross_attention_nodes_only": True}])
def test_decoder_memories_made_together_equal_each_layers_own(dictionary, options):
    """The decoder makes every layer's cross-attention memory in one product and one
    accumulation (``shared_source_memories``): each equals what the layer makes alone, and their
    gradients reach every layer's parameters."""
    torch.manual_seed(0)
    model = build_model(dictionary, decoder_layers=3, **options).double()
    batch = collate(random_examples(random.Random(21), dictionary, 5), dictionary)
    encoder_out = encode(model, batch)
    paths = encoder_out["src_embedding_paths"]
    tree = SourceTree.from_batch(
        encoder_out["encoder_padding_mask"][0], encoder_out["src_node_spans"][0],
        paths[0] if paths else None, leaves=encoder_out["encoder_out"][0],
        nodes=encoder_out["encoder_nodes"][0])
    attentions = [layer.encoder_attn for layer in model.decoder.layers]
    shared = tree_decoder.shared_source_memories(attentions, tree, incremental=False)
    assert list(shared) == attentions
    for attention in attentions:
        own = attention.source_memory(tree)
        for name in ("prev_key", "prev_value", "key_mask"):
            torch.testing.assert_close(shared[attention][name], own[name], rtol=1e-12, atol=1e-12)
    sum(m["prev_value"].sum() + m["prev_key"].sum() for m in shared.values()).backward()
    for attention in attentions:
        for name, parameter in attention.named_parameters():
            if name.startswith(("q_proj", "out_proj")):
                continue  # the queries' side: not in the memory
            assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name



def layout_before_packing(model, state: dict) -> dict:
    """``state`` of ``model`` as checkpoints made before the input projections, u and the
    hierarchical embeddings were packed hold it: ``q_proj.weight``, ..., ``leaf_weight``,
    ``leaf_bias``, and E^v and E^h apart."""
    state = dict(state)
    for name, attention in model.named_modules():
        if not isinstance(attention, TreeAttentionBase):
            continue
        prefix = name + "."
        weight, bias = state.pop(prefix + "in_proj_weight"), state.pop(prefix + "in_proj_bias")
        width = attention.embed_dim
        for i, projection in enumerate(attention.packed):
            rows = slice(i * width, (i + 1) * width)
            state[f"{prefix}{projection}.weight"] = weight[rows]
            state[f"{prefix}{projection}.bias"] = bias[rows]
        u = weight[attention.leaf_rows]
        state[prefix + "leaf_weight"] = u.t() if attention.leaf_bias is not None else u[0]
        if attention.leaf_bias is not None:
            state[prefix + "leaf_bias"] = bias[attention.leaf_rows]
        table = state.pop(prefix + "hierarchical_embedding.weight")
        rows = attention.hierarchical_embedding.rows
        state[prefix + "hierarchical_embedding.vertical"] = table[0, :rows[0]]
        state[prefix + "hierarchical_embedding.horizontal"] = table[1, :rows[1]]
    return state


@pytest.mark.parametrize("options", [{}, {"released_accumulation": True}])
def test_checkpoints_with_projections_apart_load_to_the_same_model(dictionary, options):
    """A checkpoint of the layout before packing (paper, and the released conventions' U and b)
    loads strictly into today's model and gives its outputs; a paper checkpoint does not load
    into a model of convention (c): the strict load names the keys."""
    torch.manual_seed(3)
    model = build_model(dictionary, **options).double().eval()
    old = layout_before_packing(model, model.state_dict())
    assert not any(k.endswith("in_proj_weight") for k in old)
    torch.manual_seed(4)
    loaded = build_model(dictionary, **options).double().eval()
    loaded.load_state_dict(old)
    batch = collate(random_examples(random.Random(8), dictionary, 5), dictionary)["net_input"]
    with torch.no_grad():
        torch.testing.assert_close(loaded(**batch)[0], model(**batch)[0], rtol=0, atol=0)
    if not options:
        other = build_model(dictionary, released_head_weights=True).double()
        with pytest.raises(RuntimeError, match="leaf_weight"):
            other.load_state_dict(layout_before_packing(model, model.state_dict()))
