"""Constituent attention (Wang et al., 2019, Eqs. 2-8) against literal computations, and the
constituent_transformer masked LM built as fairseq-train builds it."""

import argparse
import math

import pytest
import torch
from fairseq.data import Dictionary
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

import fairseq_tree  # noqa: F401  (registers the models)
from fairseq_tree.modules.constituent_attention import (
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
