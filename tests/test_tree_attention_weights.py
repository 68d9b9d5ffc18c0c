"""The tree attentions' returned weights (``need_weights`` / ``need_head_weights``, fairseq's
contract): their shapes, which keys each row covers, that they are the probabilities the output
was computed with, and that only fairseq's alignment layer asks for them in training."""

import random

import pytest
import torch

from fairseq_tree.modules.tree_attention import TreeCrossAttention, TreeSelfAttention
from model_helpers import build_model, collate, random_examples, tree_dictionary


@pytest.fixture(scope="module")
def dictionary():
    return tree_dictionary()


@pytest.fixture(scope="module")
def calls(dictionary):
    """(module, kwargs) of every tree attention call in one forward pass of a float64 model,
    with subtree masking and without."""
    recorded = {}
    for no_subtree_mask in (False, True):
        torch.manual_seed(5)
        model = build_model(dictionary, no_subtree_mask=no_subtree_mask).double().eval()
        batch = collate(random_examples(random.Random(30), dictionary, 5), dictionary)
        seen = []
        hooks = [m.register_forward_pre_hook(
            lambda module, args, kwargs: seen.append((module, dict(kwargs))), with_kwargs=True)
            for m in model.modules() if isinstance(m, (TreeSelfAttention, TreeCrossAttention))]
        with torch.no_grad():
            model(**batch["net_input"])
        for hook in hooks:
            hook.remove()
        recorded[no_subtree_mask] = seen
    return recorded


def asked(module, kwargs, **flags):
    with torch.no_grad():
        return module(**{**kwargs, "need_weights": False, "need_head_weights": False, **flags})


def check_fairseq_shapes(module, kwargs, keys: int):
    """None unless asked; H x B x Q x S per head, their mean over heads otherwise; the output
    does not depend on the asking."""
    plain, none = asked(module, kwargs)
    assert none is None
    out_mean, mean = asked(module, kwargs, need_weights=True)
    out_heads, heads = asked(module, kwargs, need_head_weights=True)
    queries, batch = plain.shape[:2]
    assert heads.shape == (module.num_heads, batch, queries, keys)
    assert mean.shape == (batch, queries, keys)
    torch.testing.assert_close(mean, heads.mean(dim=0), rtol=0, atol=0)
    for out in (out_mean, out_heads):
        torch.testing.assert_close(out, plain, rtol=0, atol=1e-12)
    torch.testing.assert_close(heads.sum(-1), torch.ones_like(heads.sum(-1)), rtol=0, atol=1e-12)
    return plain, heads


def output_from(module, weights, values):
    """out_proj of the weights (H x B x Q x S) applied to the values (B x H x S x D)."""
    return module.out_proj(module.merge_heads(weights.transpose(0, 1) @ values))


@pytest.mark.parametrize("no_subtree_mask", [False, True])
def test_self_attention_weights_cover_what_each_query_sees(calls, no_subtree_mask):
    """Rows and columns [leaves; nodes]: a leaf query's row is 0 on the node keys (Eq. 18), a
    node query's is 0 outside its span's leaves and its subtree's nodes (Eq. 17), and the rows
    are the probabilities that gave the output."""
    checked = 0
    for module, kwargs in calls[no_subtree_mask]:
        if not isinstance(module, TreeSelfAttention):
            continue
        tree, query = kwargs["key_padding_mask"], kwargs["query"]
        plain, heads = check_fairseq_shapes(module, kwargs, keys=query.size(0))
        visible = tree.self_attention_mask(not no_subtree_mask).squeeze(1)  # B x T x T
        assert heads.masked_select(~visible.unsqueeze(0)).abs().max() == 0
        assert heads[:, :, :tree.num_leaves, tree.num_leaves:].abs().max() == 0
        n = tree.num_leaves
        values = module.v_proj(query)  # W^V apart, not the packed product
        node_values = module.accumulated_node_values(tree, values, module.leaf_weights(query))
        values = module.split_heads(torch.cat([values[:n], node_values]))
        torch.testing.assert_close(output_from(module, heads, values), plain, rtol=0, atol=1e-12)
        checked += 1
    assert checked == 2


def test_cross_attention_weights_cover_leaves_and_nodes(calls):
    """Target queries over the source keys [leaves; nodes]: nothing on padding, and the rows
    are the probabilities that gave the output."""
    checked = 0
    for module, kwargs in calls[False]:
        if not isinstance(module, TreeCrossAttention):
            continue
        tree = kwargs["key"]
        plain, heads = check_fairseq_shapes(module, kwargs, tree.num_leaves + tree.num_nodes)
        padding = tree.memory_padding_mask()  # B x (N + M)
        assert heads.masked_select(padding[None, :, None, :]).abs().max() == 0
        memory = module.source_memory(tree)
        torch.testing.assert_close(output_from(module, heads, memory["prev_value"]), plain,
                                   rtol=0, atol=1e-12)
        checked += 1
    assert checked == 2


def test_a_memory_of_nodes_only_gives_the_leaves_no_attention(dictionary):
    """--cross-attention-nodes-only: every target query's weights are 0 on the leaf keys and
    sum to 1 over the nodes; the encoder (its self-attention over leaves) is untouched."""
    torch.manual_seed(8)
    batch = collate(random_examples(random.Random(32), dictionary, 5), dictionary)
    models = {nodes_only: build_model(dictionary, cross_attention_nodes_only=nodes_only)
              .double().eval() for nodes_only in (False, True)}
    models[True].load_state_dict(models[False].state_dict())
    weights = {}
    for nodes_only, model in models.items():
        hook = model.decoder.layers[0].encoder_attn.register_forward_hook(
            lambda module, args, output, key=nodes_only: weights.update({key: output[1]}))
        model.decoder.layers[0].encoder_attn.register_forward_pre_hook(
            lambda module, args, kwargs: (args, {**kwargs, "need_head_weights": True}),
            with_kwargs=True)
        with torch.no_grad():
            model(**batch["net_input"])
        hook.remove()
    n = batch["net_input"]["src_tokens"].size(1)
    assert weights[False][..., :n].sum() > 0
    assert weights[True][..., :n].abs().max() == 0
    torch.testing.assert_close(weights[True].sum(-1), torch.ones_like(weights[True].sum(-1)),
                               rtol=0, atol=1e-12)
    encoded = [models[k].encoder(batch["net_input"]["src_tokens"],
                                 **{name: value for name, value in batch["net_input"].items()
                                    if name not in ("src_tokens", "prev_output_tokens")})
               for k in (False, True)]
    assert torch.equal(encoded[0]["encoder_out"][0], encoded[1]["encoder_out"][0])


def test_decoder_alignment_is_the_leaf_columns_of_the_cross_attention(dictionary):
    """The decoder's ``attn`` (alignments) is its last layer's cross-attention, heads averaged,
    on the leaf keys: the columns of ``src_tokens``."""
    torch.manual_seed(6)
    model = build_model(dictionary).double().eval()
    batch = collate(random_examples(random.Random(31), dictionary, 4), dictionary)
    weights = []
    hook = model.decoder.layers[-1].encoder_attn.register_forward_hook(
        lambda module, args, output: weights.append(output[1]))
    with torch.no_grad():
        _, extra = model(**batch["net_input"])
    hook.remove()
    heads, = weights  # H x B x T x (N + M): fairseq asks the alignment layer per head
    leaves = batch["net_input"]["src_tokens"].size(1)
    expected = heads[..., :leaves].float().double().mean(dim=0)  # fairseq's .float().to(x)
    torch.testing.assert_close(extra["attn"][0], expected, rtol=0, atol=0)


def test_training_asks_only_fairseqs_alignment_layer(dictionary):
    """No encoder layer asks its self-attention for weights; of the decoder layers only the
    alignment layer (the last) asks, as fairseq's decoder does for every encoder attention."""
    torch.manual_seed(7)
    model = build_model(dictionary).train()
    batch = collate(random_examples(random.Random(32), dictionary, 4), dictionary)
    returned = []
    hooks = [m.register_forward_hook(
        lambda module, args, output: returned.append((type(module), output[1] is not None)))
        for m in model.modules() if isinstance(m, (TreeSelfAttention, TreeCrossAttention))]
    model(**batch["net_input"])[0].sum().backward()
    for hook in hooks:
        hook.remove()
    assert returned == [(TreeSelfAttention, False)] * len(model.encoder.layers) + [
        (TreeCrossAttention, False)] * (len(model.decoder.layers) - 1) + [
        (TreeCrossAttention, True)]
