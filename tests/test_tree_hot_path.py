"""What tree2seq does per layer and per batch: the layers never wait for the device (everything
that would, happens once per batch when the plan is built), the plan and masks are built once per
batch, and beam search keeps one source memory per sentence."""

import random

import pytest
import torch
from fairseq.modules import FairseqDropout
from fairseq.sequence_generator import SequenceGenerator
from torch.utils._python_dispatch import TorchDispatchMode

import fairseq_tree.modules.source_tree as source_tree
from fairseq_tree.modules.tree_attention import TreeCrossAttention
from model_helpers import build_model, collate, count_memory_builds, random_examples, tree_dictionary

from bench.operator_account import host_reads  # (what would wait for a GPU)


class HostSyncs(TorchDispatchMode):
    """Records the operations that would synchronise with a GPU (and ``Tensor.tolist`` and
    ``Tensor.numpy``, which do not dispatch), each with the innermost scope it ran in (see ``watch``)."""

    def __init__(self):
        super().__init__()
        self.scopes, self.calls, self.seen = [], [], []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if host_reads(func, args):
            self.record(str(func))
        return func(*args, **(kwargs or {}))

    def record(self, what: str):
        if self.scopes:
            self.seen.append((self.scopes[-1], what))

    def watch(self, modules, name: str) -> list:
        """Make each forward call of ``modules`` a scope (name, call number); returns the hooks."""
        def enter(module, inputs):
            self.calls.append((name, len(self.calls)))
            self.scopes.append(self.calls[-1])

        def leave(module, inputs, output):
            self.scopes.pop()

        return [h for m in modules for h in (m.register_forward_pre_hook(enter),
                                             m.register_forward_hook(leave))]

    def reads(self, name: str) -> dict:
        """{call: [operations]} of every call of the scope ``name``."""
        return {call: [what for scope, what in self.seen if scope == call]
                for call in self.calls if call[0] == name}


@pytest.fixture
def syncs(monkeypatch):
    mode = HostSyncs()
    for name in ("tolist", "numpy"):
        def counted(tensor, *args, _read=getattr(torch.Tensor, name), _name=name, **kwargs):
            mode.record(_name)
            return _read(tensor, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)
    return mode


@pytest.fixture(scope="module")
def dictionary():
    return tree_dictionary()


def test_tree_path_never_waits_for_the_device_in_training(dictionary, syncs):
    """Forward and backward of a training batch as the collater makes it: nothing of the tree
    path reads a device value, neither the layers nor the encoder that builds the batch's plan
    (the collater counted the embedding paths on the CPU). fairseq's positional embeddings do
    read one, in the Transformer as here: that shows the check sees such reads."""
    torch.manual_seed(3)
    model = build_model(dictionary, attention_dropout=0.1)
    for module in model.modules():  # training as it is run: with dropout
        if isinstance(module, FairseqDropout):
            module.p = 0.1
    batch = collate(random_examples(random.Random(20), dictionary, 6), dictionary)
    hooks = syncs.watch([*model.encoder.layers, *model.decoder.layers], "layer")
    hooks += syncs.watch([model.encoder], "encoder")
    hooks += syncs.watch([model.encoder.embed_positions, model.decoder.embed_positions],
                         "positions")
    with syncs:
        log_probs = model.get_normalized_probs(model(**batch["net_input"]), log_probs=True)
        syncs.scopes.append(("backward", 0))
        log_probs.gather(-1, batch["target"].unsqueeze(-1)).sum().backward()
        syncs.scopes.pop()
    for hook in hooks:
        hook.remove()
    layers = syncs.reads("layer")
    assert len(layers) == len(model.encoder.layers) + len(model.decoder.layers)
    assert list(layers.values()) == [[]] * len(layers)
    assert [what for scope, what in syncs.seen if scope == ("backward", 0)] == []
    assert list(syncs.reads("encoder").values()) == [[]]
    assert any(syncs.reads("positions").values())


def test_without_collated_paths_the_encoder_finds_them(dictionary, syncs):
    """A batch made without the collater (no ``src_embedding_paths``) gives the same output; the
    encoder then counts the paths itself, reading the spans back to the host (once, before its
    layers)."""
    torch.manual_seed(5)
    model = build_model(dictionary).eval()
    net_input = collate(random_examples(random.Random(23), dictionary, 5), dictionary)["net_input"]
    encoder_input = {k: v for k, v in net_input.items() if k != "prev_output_tokens"}
    bare = {k: v for k, v in encoder_input.items() if k != "src_embedding_paths"}
    bare["src_node_spans"] = bare["src_node_spans"].clone()  # plans are kept by spans tensor
    with torch.no_grad():
        collated = model.encoder(**encoder_input)["encoder_nodes"][0]
        hooks = syncs.watch([model.encoder], "encoder")
        with syncs:
            found = model.encoder(**bare)["encoder_nodes"][0]
    for hook in hooks:
        hook.remove()
    torch.testing.assert_close(found, collated, rtol=0, atol=0)
    encoder, = syncs.reads("encoder").values()
    assert encoder.count("numpy") == 1  # the spans, for the paths


def test_beam_search_layers_never_wait_for_the_device(dictionary, syncs):
    """In beam search the decoder layers read no device value, not even at the first step,
    when the plan of the sentences' trees is built for their cached memory: the paths travel
    with the encoder's output and are reordered with it."""
    torch.manual_seed(4)
    model = build_model(dictionary).eval()
    batch = collate(random_examples(random.Random(21), dictionary, 3), dictionary)
    hooks = syncs.watch(model.decoder.layers, "layer")
    generator = SequenceGenerator([model], dictionary, beam_size=3, max_len_b=6, min_len=6)
    with syncs:
        generator.generate([model], batch)
    for hook in hooks:
        hook.remove()
    calls = list(syncs.reads("layer").values())
    assert len(calls) == 7 * len(model.decoder.layers)  # 6 tokens and EOS
    assert calls == [[]] * len(calls)


def test_one_plan_and_one_set_of_masks_per_batch(dictionary, monkeypatch):
    """Encoder and decoder share the batch's accumulation plan; each attention mask is built
    once for all layers, already additive."""
    built = {"plans": 0, "masks": 0}
    for name, key in (("build_accumulation_plan", "plans"), ("blocked", "masks")):
        original = getattr(source_tree, name)

        def counted(*args, _original=original, _key=key, **kwargs):
            built[_key] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(source_tree, name, counted)
    model = build_model(dictionary)
    batch = collate(random_examples(random.Random(22), dictionary, 4), dictionary)
    model(**batch["net_input"])[0].sum().backward()
    assert len(model.encoder.layers) > 1 and len(model.decoder.layers) > 1
    # the units' queries (encoder); the memory's key padding (decoder)
    assert built == {"plans": 1, "masks": 2}


def prefer_eos(model, dictionary, bonus: float):
    """Raise EOS's logit so that sentences end after different numbers of steps (beam search
    then drops finished sentences from the batch)."""
    eos = torch.tensor([dictionary.eos()])
    return model.decoder.output_projection.register_forward_hook(
        lambda module, inputs, logits: logits.index_add(
            -1, eos, torch.full_like(logits[..., :1], bonus)))


def test_beam_search_keeps_one_memory_per_sentence(dictionary, monkeypatch):
    """The cached cross-attention memory has one row per sentence, not per beam copy, and the
    hypotheses equal those of a memory kept for every copy, also as finished sentences leave."""
    torch.manual_seed(0)
    model = build_model(dictionary).double().eval()
    batch = collate(random_examples(random.Random(15), dictionary, 5), dictionary)
    hook = prefer_eos(model, dictionary, 4.0)
    rows, orders = count_memory_builds(monkeypatch), []
    reorder = TreeCrossAttention.reorder_incremental_state
    monkeypatch.setattr(TreeCrossAttention, "reorder_incremental_state",
                        lambda self, state, order: orders.append(order.numel())
                        or reorder(self, state, order))
    results = {}
    for shared in (True, False):
        generator = SequenceGenerator([model], dictionary, beam_size=4, max_len_b=12)
        if not shared:
            for layer in model.decoder.layers:
                layer.encoder_attn.set_beam_size(1)
        hypotheses = generator.generate([model], batch)
        results[shared] = [[(h["tokens"].tolist(), float(h["score"])) for h in hyps]
                           for hyps in hypotheses]
        assert rows == [5 if shared else 20] * len(model.decoder.layers)
        assert len(set(orders)) > 2  # sentences finished at different steps
        rows.clear(), orders.clear()
    hook.remove()
    for with_shared, per_copy in zip(results[True], results[False]):
        assert [tokens for tokens, _ in with_shared] == [tokens for tokens, _ in per_copy]
        for (_, a), (_, b) in zip(with_shared, per_copy):
            assert a == pytest.approx(b, rel=1e-9)
