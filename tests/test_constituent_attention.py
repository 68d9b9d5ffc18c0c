"""Constituent attention (Wang et al., 2019, Eqs. 2-8) against literal computations, and the
constituent_transformer masked LM built as fairseq-train builds it."""

import argparse
import math

import pytest
import torch
from fairseq.data import Dictionary
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

import fairseq_tree  # noqa: F401  (registers the models)
from constituent_reference import literal_layer
from fairseq_tree.modules.constituent_attention import (
    ConstituentSelfAttention,
    LinkChain,
    constituent_prior,
    hierarchical_constraint,
    link_probability,
    neighbour_attention,
    neighbour_scores,
)


def literal_prior(links: list[float]) -> list[list[float]]:
    """Eq. 3 as written: C_ij = prod_{k=min(i,j)}^{max(i,j)-1} a_k; the empty product is 1."""
    n = len(links) + 1
    return [[math.prod(links[min(i, j):max(i, j)]) for j in range(n)] for i in range(n)]


def test_prior_is_the_product_over_each_span():
    torch.manual_seed(0)
    links = torch.rand(3, 7, dtype=torch.float64) * 0.98 + 0.01
    padding = torch.zeros(3, 8, dtype=torch.bool)
    prior = constituent_prior(links, padding).double()
    for row, expected in zip(prior, links.tolist()):
        assert torch.allclose(row, torch.tensor(literal_prior(expected), dtype=torch.float64),
                              rtol=1e-5, atol=0)
    assert torch.equal(prior, prior.transpose(1, 2))
    assert torch.all(prior.diagonal(dim1=1, dim2=2) == 1)  # C_ii: the empty product


def test_prior_ignores_padding():
    links = torch.tensor([[0.5, 0.2, 0.9, 0.0, 0.0]])  # a sentence of 4 tokens, 2 pads
    padding = torch.tensor([[False] * 4 + [True] * 2])
    padded = constituent_prior(links, padding)[0, :4, :4]
    alone = constituent_prior(links[:, :3], padding[:, :4])[0]
    assert torch.equal(padded, alone)
    assert torch.allclose(alone.double(), torch.tensor(literal_prior([0.5, 0.2, 0.9]),
                                                       dtype=torch.float64), rtol=1e-6)


def test_neighbouring_attention_equations():
    torch.manual_seed(1)
    q, k = torch.randn(1, 4, 6, dtype=torch.float64), torch.randn(1, 4, 6, dtype=torch.float64)
    right, left = neighbour_scores(q, k)
    d = 6 / 2  # Eq. 5: d = d_model / 2
    assert right[0, 1].item() == pytest.approx(q[0, 1] @ k[0, 2] / d)
    assert left[0, 1].item() == pytest.approx(q[0, 2] @ k[0, 1] / d)
    padding = torch.zeros(1, 4, dtype=torch.bool)
    log_right, log_left = neighbour_attention(right, left, padding)
    # Eq. 6: token 1 chooses between its right (s_{1,2}) and left (s_{1,0}) neighbour.
    s12, s10 = right[0, 1], left[0, 0]
    assert log_right[0, 1].exp().item() == pytest.approx(torch.sigmoid(s12 - s10).item())
    assert log_right[0, 0].exp().item() == pytest.approx(1.0)  # the first token: right only
    assert log_left[0, 2].exp().item() == pytest.approx(1.0)  # the last token: left only
    links = link_probability(log_right, log_left, padding)
    expected = math.sqrt(log_right[0, 1].exp() * log_left[0, 1].exp())  # Eq. 7
    assert links[0, 1].item() == pytest.approx(expected)


def test_hierarchical_constraint():
    previous, current = torch.tensor([0.0, 0.5, 1.0]), torch.tensor([0.3, 0.5, 0.2])
    assert torch.allclose(hierarchical_constraint(previous, current),
                          torch.tensor([0.3, 0.75, 1.0]))


def check_against_literal(layers, inputs, padding, outputs):
    """Every layer's a^l (in ``layers[0].chain``), outputs and head-averaged E against
    ``literal_layer`` run sentence by sentence on the real tokens, a^{l-1} carried from the
    literal previous layer. ``inputs``: each layer's input T x B x C; ``outputs``: each layer's
    (output, weights). Returns the largest differences (links, outputs, weights)."""
    chain = layers[0].chain
    assert len(chain.links) == len(layers)
    worst = {"links": 0.0, "outputs": 0.0, "weights": 0.0}
    for b in range(padding.size(0)):
        real = (~padding[b]).nonzero().view(-1)
        n = len(real)
        assert torch.equal(real, torch.arange(real[0], real[0] + n))  # contiguous
        inner = real[:-1]  # link positions between two real tokens
        previous = [0.0] * (n - 1)  # a^{-1} = 0
        for layer, x, (out, weights), links in zip(layers, inputs, outputs, chain.links):
            literal = literal_layer(x[real, b].tolist(), layer, previous)
            previous = literal["links"]
            expected_links = torch.tensor(literal["links"], dtype=torch.float64)
            worst["links"] = max(worst["links"],
                                 (links[b, inner] - expected_links).abs().max().item()
                                 if n > 1 else 0.0)
            outside = torch.ones(links.size(1), dtype=torch.bool)
            outside[inner] = False
            assert torch.all(links[b, outside] == 0)  # links touching padding
            got = out[real, b]
            expected = torch.tensor(literal["outputs"], dtype=torch.float64)
            worst["outputs"] = max(worst["outputs"], (got - expected).abs().max().item())
            if weights is None:
                continue
            got_weights = weights[b][real][:, real]
            expected_weights = torch.tensor(literal["weights"], dtype=torch.float64)
            worst["weights"] = max(worst["weights"],
                                   (got_weights - expected_weights).abs().max().item())
            assert torch.all(weights[b][real][:, padding[b]] == 0)  # no attention to pads
    return worst


@pytest.mark.parametrize("heads", [1, 2, 4])
@pytest.mark.parametrize("side", ["right", "left"])
def test_layers_equal_the_literal_equations_in_float64(heads, side):
    """Eqs. 2-8: three ConstituentSelfAttention layers sharing one LinkChain (a^{l-1} carried
    from layer to layer), float64, random parameters (LayerNorm's too), a padded batch of
    sentences of 7, 5, 2 and 1 tokens, against the literal float64 reference. The links are
    float64 all the way (1e-12); the prior and E are computed in float32 by the module (see
    ``constituent_prior``), so the outputs and weights get float32's tolerance."""
    torch.manual_seed(heads + 10 * (side == "left"))
    lengths, width, dim, num_layers = [7, 5, 2, 1], 7, 8, 3
    chain = LinkChain()
    layers = [ConstituentSelfAttention(dim, heads, chain).double().eval()
              for _ in range(num_layers)]
    for layer in layers:
        norm = layer.neighbouring_attention.layer_norm
        with torch.no_grad():
            norm.weight.normal_(1.0, 0.5), norm.bias.normal_(0.0, 0.5)
    padding = torch.arange(width)[None, :] >= torch.tensor(lengths)[:, None]  # B x T
    if side == "left":
        padding = padding.flip(1)
    chain.start(padding)
    inputs = [torch.randn(width, len(lengths), dim, dtype=torch.float64)
              for _ in range(num_layers)]
    with torch.no_grad():
        outputs = [layer(x, x, x, key_padding_mask=padding, need_weights=True)
                   for layer, x in zip(layers, inputs)]
    # The links are neither saturated nor equal: the comparison can tell them apart.
    links = chain.stacked()[:, 0, :6]
    assert 0.05 < links.min() and links.max() < 0.999 and links[0].std() > 0.05
    assert torch.all(links[1:] > links[:-1])
    worst = check_against_literal(layers, inputs, padding, outputs)
    assert worst["links"] < 1e-12, worst
    assert worst["outputs"] < 1e-6 and worst["weights"] < 5e-7, worst


def tiny_model(arch="constituent_transformer_tiny", **options):
    dictionary = Dictionary()
    for i in range(30):
        dictionary.add_symbol(f"w{i}")
    dictionary.add_symbol("<mask>")

    class Task:
        source_dictionary = target_dictionary = dictionary

        def max_positions(self):
            return 64

    args = argparse.Namespace(arch=arch, encoder_layers=4, encoder_embed_dim=32,
                              encoder_ffn_embed_dim=64, encoder_attention_heads=4, **options)
    ARCH_CONFIG_REGISTRY[arch](args)
    return ARCH_MODEL_REGISTRY[arch].build_model(args, Task()).eval(), dictionary


def test_the_model_equals_the_literal_equations_in_float64():
    """The constituent_transformer masked LM (4 layers, 4 heads), in float64, on a right-padded
    batch as masked_lm collates it: each layer's self-attention input is recorded, and the
    model's link_probabilities and every layer's attention output equal the literal reference
    fed those inputs, a^l carried over the layers from a^{-1} = 0. The parameters are drawn
    larger than BERT's initialisation (std 0.02), so that the outputs are not all near 0."""
    torch.manual_seed(5)
    model, dictionary = tiny_model()
    model.double()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_(0.0, 0.3)
    layers = [layer.self_attn for layer in model.encoder.sentence_encoder.layers]
    inputs, outputs = [], []

    def record(module, args, kwargs, output):
        inputs.append(kwargs["query"])
        outputs.append(output)

    hooks = [layer.register_forward_hook(record, with_kwargs=True) for layer in layers]
    tokens = torch.full((3, 9), dictionary.pad())
    for row, length in enumerate([9, 6, 3]):
        tokens[row, :length] = torch.randint(4, 34, (length,))
        tokens[row, 0], tokens[row, length - 1] = dictionary.bos(), dictionary.eos()
    with torch.no_grad():
        _, extra = model(tokens)
    for hook in hooks:
        hook.remove()
    assert len(inputs) == 4 and extra["link_probabilities"].dtype == torch.float64
    real_links = extra["link_probabilities"][:, 0, 1:-1]  # between words of the longest row
    assert 0.01 < real_links.min() and real_links[0].max() < 0.99
    assert min(out[0].abs().max().item() for out in outputs) > 0.5
    for links, carried in zip(extra["link_probabilities"], layers[0].chain.links):
        assert torch.equal(links, carried)
    worst = check_against_literal(layers, inputs, tokens.eq(dictionary.pad()), outputs)
    assert worst["links"] < 1e-12 and worst["outputs"] < 2e-6, worst  # outputs up to ~10


def test_links_never_decrease_across_layers():
    torch.manual_seed(2)
    model, _ = tiny_model()
    tokens = torch.randint(4, 34, (5, 12))
    tokens[:, 0], tokens[:, -1] = 0, 2
    _, extra = model(tokens)
    links = extra["link_probabilities"]  # L x B x (T-1)
    assert links.shape == (4, 5, 11)
    assert torch.all(links[1:] >= links[:-1]) and torch.all((links >= 0) & (links <= 1))


def test_a_sentence_alone_and_in_a_padded_batch():
    torch.manual_seed(3)
    model, dictionary = tiny_model()
    short = torch.tensor([0, 5, 9, 7, 2])
    long = torch.tensor([0, 11, 12, 13, 14, 15, 16, 2])
    batch = torch.full((2, 8), dictionary.pad())
    batch[0, :5], batch[1] = short, long
    out_batch, extra_batch = model(batch)
    out_alone, extra_alone = model(short.unsqueeze(0))
    assert torch.allclose(out_batch[0, :5], out_alone[0], atol=1e-5)
    assert torch.allclose(extra_batch["link_probabilities"][:, 0, :4],
                          extra_alone["link_probabilities"][:, 0], atol=1e-6)
    assert torch.all(extra_batch["link_probabilities"][:, 0, 4:] == 0)  # links into padding


def test_weights_per_head_and_averaged_as_fairseq_returns_them():
    """None unless asked; E of Eq. 2 per head (H x B x T x T) with need_head_weights, its mean
    over heads (B x T x T) with need_weights; the output does not depend on the asking."""
    torch.manual_seed(4)
    chain, padding = LinkChain(), torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    layer = ConstituentSelfAttention(8, 2, chain).double().eval()
    x = torch.randn(5, 2, 8, dtype=torch.float64)
    results = []
    for flags in ({}, {"need_weights": True}, {"need_head_weights": True}):
        chain.start(padding)
        with torch.no_grad():
            results.append(layer(x, x, x, key_padding_mask=padding, **flags))
    (plain, none), (out_mean, mean), (out_heads, heads) = results
    assert none is None and heads.shape == (2, 2, 5, 5) and mean.shape == (2, 5, 5)
    torch.testing.assert_close(mean, heads.mean(dim=0), rtol=0, atol=0)
    for out in (out_mean, out_heads):
        torch.testing.assert_close(out, plain, rtol=0, atol=0)


def test_same_size_baseline_and_backward():
    constituent, _ = tiny_model()
    plain, _ = tiny_model("plain_transformer_mlm_tiny")
    count = lambda model: sum(p.numel() for p in model.parameters())
    # Per layer: the link query and key projections and their LayerNorm, nothing else.
    assert count(constituent) - count(plain) == 4 * (2 * (32 * 32 + 32) + 2 * 32)
    constituent.train()
    tokens = torch.randint(4, 34, (3, 9))
    logits, _ = constituent(tokens)
    logits.sum().backward()
    link_query = constituent.encoder.sentence_encoder.layers[0].self_attn.neighbouring_attention
    assert link_query.link_query.weight.grad.abs().sum() > 0


def test_activation_checkpointing_is_refused():
    with pytest.raises(ValueError, match="checkpoint-activations"):
        tiny_model(checkpoint_activations=True)
