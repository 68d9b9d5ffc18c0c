"""The syntactic decoder: Transformer Grammars' STACK / COMPOSE masks over the tree a decoder
writes (``modules/written_tree.py``), the decoders under them (``models/syntactic_decoder.py``),
and their runs with fairseq-train, fairseq-generate and the hub."""

import argparse
import random

import pytest
import torch
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

from fairseq_tree.data.linearized_tree import add_tree_symbols
from fairseq_tree.data.output_tree import OutputTree
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.modules.written_tree import WrittenTreeState, written_tree_mask
from model_helpers import FakeTask, tree_dictionary

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
    full = written_tree_mask(tokens, OPEN, CLOSE)
    order = torch.arange(6)
    for step in range(tokens.size(1)):
        row = state(tokens[order, :step + 1], incremental)
        assert torch.equal(row[:, 0], full[order, step, :step + 1])
        new_order = torch.randperm(6, generator=torch.Generator().manual_seed(step))
        state.reorder_incremental_state(incremental, new_order)
        order = order[new_order]
