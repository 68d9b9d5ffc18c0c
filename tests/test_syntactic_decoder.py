"""The syntactic decoder: Transformer Grammars' STACK / COMPOSE masks over the tree a decoder
writes (``modules/written_tree.py``), the decoders under them (``models/syntactic_decoder.py``),
and their runs with fairseq-train, fairseq-generate and the hub."""

import argparse
import random
import re

import pytest
import torch
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

from conftest import GENERATE, TRAIN, TREES, run_cli

from fairseq_tree.data.linearized_tree import add_tree_symbols
from fairseq_tree.data.output_tree import OutputTree
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.modules.written_tree import WrittenTreeState, written_tree_mask
from model_helpers import FakeTask, collate, random_examples, tree_dictionary
from test_target_trees import TARGET_TREES, data_bin  # noqa: F401  (the tiny corpus)

from fairseq_tree.modules.written_tree import depth_differences, tree_depths

OPEN, CLOSE, EOS = 101, 102, 2
S, NP, THE, DOG, BARKED = 11, 12, 20, 21, 22


def rows(mask: torch.Tensor) -> list:
    """Each query's visible keys, as position lists."""
    return [torch.nonzero(row).flatten().tolist() for row in mask]


def test_the_masks_of_a_hand_built_tree():
    """``</s> [(] [S] [(] [NP] the dog [)] barked [)]``: the closing brackets compose their
    constituent's positions on the stack, every other position sees the stack and itself."""
    tokens = torch.tensor([[EOS, OPEN, S, OPEN, NP, THE, DOG, CLOSE, BARKED, CLOSE]])
    assert rows(written_tree_mask(tokens, OPEN, CLOSE)[0]) == [
        [0],                    # </s>            STACK
        [0, 1],                 # [(]             STACK
        [0, 1, 2],              # [S]             STACK
        [0, 1, 2, 3],           # [(]             STACK
        [0, 1, 2, 3, 4],        # [NP]            STACK
        [0, 1, 2, 3, 4, 5],     # the             STACK
        [0, 1, 2, 3, 4, 5, 6],  # dog             STACK
        [3, 4, 5, 6, 7],        # [)] of NP       COMPOSE: its bracket, label, words, itself
        [0, 1, 2, 7, 8],        # barked          STACK: the NP is its closing bracket now
        [1, 2, 7, 8, 9],        # [)] of S        COMPOSE: bracket, label, the NP, barked
    ]
    depth, _ = tree_depths(tokens, OPEN, CLOSE)
    assert depth.tolist() == [[0, 1, 1, 2, 2, 2, 2, 1, 1, 0]]  # a closing bracket: its parent's
    assert depth_differences(depth, depth, clip=1)[0, 8].tolist() == [
        1, 0, 0, -1, -1, -1, -1, 0, 0, 1]


def test_a_closed_constituent_inside_a_closed_one_is_seen_through_the_outer_one_only():
    """``</s> [(] [S] [(] [NP] [(] [NP] the [)] dog [)] [(] [VP] barked [)] [)] .``"""
    tokens = torch.tensor([[EOS, OPEN, S, OPEN, NP, OPEN, NP, THE, CLOSE, DOG, CLOSE,
                            OPEN, NP, BARKED, CLOSE, CLOSE, THE]])
    mask = rows(written_tree_mask(tokens, OPEN, CLOSE)[0])
    assert mask[8] == [5, 6, 7, 8]                # COMPOSE of the inner NP
    assert mask[9] == [0, 1, 2, 3, 4, 8, 9]       # STACK: the inner NP is its bracket
    assert mask[10] == [3, 4, 8, 9, 10]           # COMPOSE of the outer NP
    assert mask[11] == [0, 1, 2, 10, 11]          # STACK: the outer NP alone stands for both
    assert mask[14] == [11, 12, 13, 14]
    assert mask[15] == [1, 2, 10, 14, 15]         # COMPOSE of S: its label and two phrases
    assert mask[16] == [0, 15, 16]                # after the tree: </s>, the tree, itself


def test_a_closing_bracket_with_nothing_open_is_read_as_a_word():
    tokens = torch.tensor([[EOS, CLOSE, OPEN, NP, THE, CLOSE, CLOSE, DOG]])
    assert rows(written_tree_mask(tokens, OPEN, CLOSE)[0]) == [
        [0], [0, 1], [0, 1, 2], [0, 1, 2, 3], [0, 1, 2, 3, 4], [2, 3, 4, 5],
        [0, 1, 5, 6], [0, 1, 5, 6, 7]]


def random_written_trees(rng: random.Random, count: int, length: int) -> torch.Tensor:
    """``count`` random prefixes of ``length`` tokens, ``</s>`` first: brackets, labels and
    words, balanced or not (a decoder without constraints may write anything)."""
    pool = [OPEN, CLOSE, S, NP, THE, DOG, BARKED]
    return torch.tensor([[EOS] + [rng.choice(pool) for _ in range(length - 1)]
                         for _ in range(count)])


def test_the_state_advanced_a_token_at_a_time_gives_the_full_masks_with_beam_reordering():
    rng = random.Random(0)
    tokens = random_written_trees(rng, 6, 30)
    state, incremental = WrittenTreeState(OPEN, CLOSE), {}
    full, (depth, _) = written_tree_mask(tokens, OPEN, CLOSE), tree_depths(tokens, OPEN, CLOSE)
    order = torch.arange(6)
    for step in range(tokens.size(1)):
        row = state(tokens[order, :step + 1], incremental)
        assert torch.equal(row.allowed[:, 0], full[order, step, :step + 1])
        assert torch.equal(row.query_levels[:, 0], depth[order, step])
        assert torch.equal(row.key_levels, depth[order, :step + 1])
        new_order = torch.randperm(6, generator=torch.Generator().manual_seed(step))
        state.reorder_incremental_state(incremental, new_order)
        order = order[new_order]


# ---------------------------------------------------------------- the decoders

TINY = dict(encoder_embed_dim=32, decoder_embed_dim=32, encoder_ffn_embed_dim=64,
            decoder_ffn_embed_dim=64, encoder_attention_heads=4, decoder_attention_heads=4,
            encoder_layers=2, decoder_layers=2)
ARCHS = ["tree2seq_syntactic_decoder", "transformer_syntactic_decoder"]
# each architecture without and with the depth bias
MODELS = [(arch, options) for arch in ARCHS for options in ({}, {"tree_depth_bias": 3})]


@pytest.fixture(scope="module")
def written():
    """A joined dictionary with the tree brackets, and the task of a model that writes trees."""
    dictionary = tree_dictionary()
    [symbols] = add_tree_symbols(dictionary)
    task = FakeTask(dictionary)
    task.output_tree = OutputTree(symbols)
    return task


def syntactic_model(task, arch, **options):
    """A float64 model of ``arch`` in evaluation mode, as fairseq-train builds it."""
    torch.manual_seed(0)
    args = argparse.Namespace(arch=arch, dropout=0.0, share_all_embeddings=True,
                              **{**TINY, **options})
    ARCH_CONFIG_REGISTRY[arch](args)
    model = ARCH_MODEL_REGISTRY[arch].build_model(args, task).double().eval()
    for layer in model.decoder.layers:
        assert (layer.self_attn.depth_bias is not None) == bool(args.tree_depth_bias)
        if layer.self_attn.depth_bias is not None:  # trained, not as initialised (zeros)
            torch.nn.init.normal_(layer.self_attn.depth_bias.weight)
    return model


def encode(model, batch):
    net = batch["net_input"]
    if model.encoder.__class__.__name__ == "TreeEncoder":
        return model.encoder(**{k: v for k, v in net.items() if k != "prev_output_tokens"})
    return model.encoder(net["src_tokens"], src_lengths=net["src_lengths"])


def written_prefixes(rng: random.Random, task, count: int, length: int) -> torch.Tensor:
    """Random decoder inputs (``</s>`` first) of brackets, labels and words, unbalanced too."""
    dictionary = task.target_dictionary
    pool = [*task.output_tree.symbols.bracket_ids] * 3 + [
        dictionary.index(s) for s in ("[S]", "[NP]", "w1", "w2", "w3", "w4")]
    return torch.tensor([[dictionary.eos()] + [rng.choice(pool) for _ in range(length - 1)]
                         for _ in range(count)])


def sources(task, count: int, seed: int) -> list:
    return random_examples(random.Random(seed), task.target_dictionary, count)


@pytest.mark.parametrize("arch,options", MODELS)
def test_incremental_decoding_equals_the_full_pass_at_every_step_with_beam_reordering(
        written, arch, options):
    """Two sentences, three beams each (each beam its own prefix): after every step the beams
    are reordered as beam search does, moved and copied within their sentence, and the next
    step equals the full pass over the reordered prefixes."""
    model = syntactic_model(written, arch, **options)
    a, b = sources(written, 2, seed=1)
    encoder_out = encode(model, collate([a] * 3 + [b] * 3, written.target_dictionary))
    prefixes = written_prefixes(random.Random(2), written, 6, 24)
    generator = torch.Generator().manual_seed(3)
    order, state = torch.arange(6), {}
    for step in range(prefixes.size(1)):
        step_logits, _ = model.decoder(prefixes[order, :step + 1], encoder_out=encoder_out,
                                       incremental_state=state)
        full_logits, _ = model.decoder(prefixes[order, :step + 1], encoder_out=encoder_out)
        # fairseq's self-attention takes its softmax in float32 even in a float64 model
        torch.testing.assert_close(step_logits[:, -1], full_logits[:, -1], rtol=0, atol=1e-6)
        new_order = torch.randint(0, 3, (6,), generator=generator) + torch.tensor([0] * 3 + [3] * 3)
        model.decoder.reorder_incremental_state_scripting(state, new_order)
        encoder_out = model.encoder.reorder_encoder_out(encoder_out, new_order)
        order = order[new_order]


@pytest.mark.parametrize("arch,options", MODELS)
def test_an_example_alone_and_padded_in_a_batch_decode_alike(written, arch, options):
    model = syntactic_model(written, arch, **options)
    examples = sources(written, 3, seed=4)
    prefixes = written_prefixes(random.Random(5), written, 3, 16)
    lengths = [16, 9, 12]
    for row, length in enumerate(lengths):
        prefixes[row, length:] = written.target_dictionary.pad()  # fairseq right-pads them
    logits, _ = model.decoder(
        prefixes, encoder_out=encode(model, collate(examples, written.target_dictionary)))
    for row, length in enumerate(lengths):
        alone = collate([examples[row]], written.target_dictionary)
        single, _ = model.decoder(prefixes[row:row + 1, :length],
                                  encoder_out=encode(model, alone))
        torch.testing.assert_close(single[0], logits[row, :length], rtol=0, atol=1e-9)


@pytest.mark.parametrize("arch", ARCHS)
def test_a_word_inside_a_closed_constituent_reaches_the_next_words_through_its_bracket_only(
        written, arch):
    """One layer: after ``[(] [NP] w1 w2 [)]`` a word's output is the same whatever words the
    NP holds (it sees the NP's closing bracket, whose input is the bracket), while the causal
    decoder of the same weights sees them."""
    model = syntactic_model(written, arch, decoder_layers=1)
    d = written.target_dictionary
    open_id, close_id = written.output_tree.symbols.bracket_ids
    tree = [d.eos(), open_id, d.index("[S]"), open_id, d.index("[NP]"), d.index("w1"),
            d.index("w2"), close_id, d.index("w3")]
    other = list(tree)
    other[5] = d.index("w4")
    encoder_out = encode(model, collate(sources(written, 1, seed=6) * 2,
                                        written.target_dictionary))
    prefixes = torch.tensor([tree, other])
    logits, _ = model.decoder(prefixes, encoder_out=encoder_out)
    torch.testing.assert_close(logits[0, -1], logits[1, -1], rtol=0, atol=1e-9)
    assert not torch.allclose(logits[0, 6], logits[1, 6])  # w2 sees w1 inside the open NP
    for layer in model.decoder.layers:  # the same weights under fairseq's causal mask
        layer.self_attn.forward = super(type(layer.self_attn), layer.self_attn).forward
    causal, _ = model.decoder(prefixes, encoder_out=encoder_out)
    assert not torch.allclose(causal[0, -1], causal[1, -1])


@pytest.mark.parametrize("arch", ARCHS)
def test_the_depth_bias_weighs_keys_by_their_depth_difference(written, arch):
    model = syntactic_model(written, arch, tree_depth_bias=3)
    encoder_out = encode(model, collate(sources(written, 2, seed=7), written.target_dictionary))
    prefixes = written_prefixes(random.Random(8), written, 2, 12)
    biased, _ = model.decoder(prefixes, encoder_out=encoder_out)
    for layer in model.decoder.layers:
        torch.nn.init.zeros_(layer.self_attn.depth_bias.weight)
    plain, _ = model.decoder(prefixes, encoder_out=encoder_out)
    assert not torch.allclose(biased, plain)
    masks_only = syntactic_model(written, arch)
    weights = {k: v for k, v in model.state_dict().items() if "depth_bias" not in k}
    masks_only.load_state_dict(weights)
    unbiased, _ = masks_only.decoder(prefixes, encoder_out=encoder_out)
    torch.testing.assert_close(plain, unbiased, rtol=0, atol=1e-6)  # a zero bias: the masks'


def test_a_syntactic_decoder_for_a_model_that_writes_words_is_refused():
    task = FakeTask(tree_dictionary())
    for arch in ARCHS:
        with pytest.raises(FairseqTreeError, match=f"--arch {arch} reads the tree its decoder "
                           "writes: train it with --task tree_translation --target-trees"):
            syntactic_model(task, arch)
    with pytest.raises(FairseqTreeError, match="--tree-depth-bias biases the syntactic "
                       "decoder's attention: use it with --syntactic-decoder"):
        syntactic_model(task, "tree2seq", tree_depth_bias=2)


# ---------------------------------------------------------------- runs

TINY_OPTIONS = [f"--{name.replace('_', '-')}={value}" for name, value in TINY.items()]


@pytest.mark.parametrize("arch,extra,model_options", [
    ("tree2seq_syntactic_decoder", [], []),
    ("transformer_syntactic_decoder", ["--tree-input", "leaves-only"], ["--tree-depth-bias", "2"]),
])
def test_the_syntactic_decoder_trains_generates_and_translates_from_the_hub(
        data_bin, tmp_path, arch, extra, model_options):
    """fairseq-train a few updates on the tiny target-trees corpus, fairseq-generate with a
    beam (incremental decoding), and the hub."""
    from fairseq_tree import hub

    save = tmp_path / "checkpoints"
    run_cli("fairseq-train", data_bin, *TRAIN, "--arch", arch, *TINY_OPTIONS, *extra,
            *model_options, "--target-trees", "--max-update", "6", "--save-dir", save)
    proc = run_cli("fairseq-generate", data_bin, *GENERATE, *extra, "--target-trees", "--path",
                   save / "checkpoint_last.pt", "--max-len-b", "40")
    hypotheses = re.findall(r"^H-\d+\t\S+\t(.*)$", proc.stdout, flags=re.M)
    assert len(hypotheses) == len(TARGET_TREES)
    assert not any(re.search(r"\[\(\]|\[\)\]", h) for h in hypotheses)
    model = hub.from_pretrained(str(save), "checkpoint_last.pt", data_name_or_path=str(data_bin))
    assert type(model.models[0].decoder).__name__.startswith("Syntactic")
    depth_bias = model.models[0].decoder.layers[0].self_attn.depth_bias
    assert (depth_bias is not None) == bool(model_options)
    translated = model.translate(TREES[:2], trees=True)
    assert len(translated) == 2 and not any("[" in t for t in translated)
    assert all(s < 0 for s in model.score(TREES[:2], TARGET_TREES[:2], trees=True))


def test_fairseq_train_refuses_a_syntactic_decoder_without_target_trees_in_one_line(
        data_bin, tmp_path):
    proc = run_cli("fairseq-train", data_bin, *TRAIN, "--arch", "tree2seq", "--syntactic-decoder",
                   *TINY_OPTIONS, "--max-update", "1", "--save-dir", tmp_path, check=False)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].endswith(
        "--arch tree2seq reads the tree its decoder writes: train it with --task "
        "tree_translation --target-trees"), proc.stderr[-2000:]
