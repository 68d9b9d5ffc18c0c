"""The partial tree a decoder has written, and the self-attention masks it gives: Transformer
Grammars' STACK and COMPOSE attention (Sartran et al., "Transformer Grammars: Augmenting
Transformer Language Models with Syntactic Inductive Biases at Scale", TACL 2022, Section 3).

The decoder reads its own linearized tree, ``</s> [(] [S] [(] [NP] the dog [)] barked [)]``.
Transformer Grammars write every closing bracket twice, the first copy composing, the second
attending to the stack; here it is written once, so the data stays the ordinary ``--target-trees``
sequence: a closing bracket COMPOSEs (it attends to its own constituent's positions still on the
stack: its opening bracket, its label and its children there, words and the closing brackets of
closed child constituents) and is from then on the one position that stands for the whole
constituent; every other position attends to the STACK (what is not inside a closed
constituent, except that constituent's closing bracket) and to itself. Labels and words are
alike to the masks: only the brackets move the stack.

Every position ``j`` has a level, the depth of the tree after it is read (the number of open
constituents), and leaves the stack at ``pop(j)``: the first closing bracket after it that closes
a constituent at its level (never, for the top level). A closing bracket with nothing open (a
malformed prefix) composes nothing: it is read as a word, so every prefix has its masks.

Two ways to the same masks: ``written_tree_mask`` builds them for whole sequences at once
(training, scoring), ``WrittenTreeState`` advances them a token at a time (incremental decoding,
its stack kept per hypothesis in fairseq's incremental state and reordered with the beam).
"""

from typing import Dict, NamedTuple, Optional, Tuple

import torch
from fairseq.incremental_decoding_utils import with_incremental_state
from torch import Tensor, nn

NEVER = torch.iinfo(torch.long).max  # the pop position of what stays on the stack


def tree_depths(tokens: Tensor, open_id: int, close_id: int) -> Tuple[Tensor, Tensor]:
    """(depth, composes) of (bsz, tgt) ``tokens``: the number of open constituents after each
    position (its level), and whether the position is a closing bracket that closes one.

    The stack of Transformer Grammars (Sartran et al., TACL 2022, Section 3.1) as a walk: an
    opening bracket adds one, a closing bracket removes one where one is open. The walk held at
    zero is the raw walk less its running minimum below zero, so it needs no loop."""
    steps = (tokens == open_id).long() - (tokens == close_id).long()
    walk = steps.cumsum(dim=1)
    depth = walk - walk.cummin(dim=1).values.clamp(max=0)
    before = torch.cat([depth.new_zeros(depth.size(0), 1), depth[:, :-1]], dim=1)
    return depth, (tokens == close_id) & (before > 0)


def pop_positions(depth: Tensor, composes: Tensor) -> Tensor:
    """(bsz, tgt) position of the closing bracket that takes each position off the stack
    (``NEVER`` for what stays): the first composing closing bracket after it whose constituent
    is at the position's level (the level before that bracket, its depth plus one). Sartran et
    al., TACL 2022, Section 3.1: COMPOSE pops a constituent's open nonterminal and children."""
    tgt = depth.size(1)
    positions = torch.arange(tgt, device=depth.device)
    closes_level = torch.where(composes, depth + 1, -1)  # the level each bracket closes
    pops = ((positions[None, None, :] > positions[None, :, None])
            & (closes_level[:, None, :] == depth[:, :, None]))
    candidates = torch.where(pops, positions, NEVER)
    return candidates.min(dim=2).values


def stack_mask(pops: Tensor) -> Tensor:
    """STACK attention (Sartran et al., TACL 2022, Section 3.1, the mask of every position but
    the composing closing bracket): (bsz, tgt, tgt) True where query ``i`` may attend to key
    ``j``, the positions on the stack once ``i`` is read: j <= i < pop(j) (``i`` itself
    included)."""
    positions = torch.arange(pops.size(1), device=pops.device)
    return ((positions[None, None, :] <= positions[None, :, None])
            & (pops[:, None, :] > positions[None, :, None]))


def compose_mask(pops: Tensor) -> Tensor:
    """COMPOSE attention (Sartran et al., TACL 2022, Section 3.1, the mask of a closing bracket):
    (bsz, tgt, tgt) True where query ``i`` may attend to key ``j``: the positions it takes off the
    stack, pop(j) = i (its constituent's opening bracket, label and children on the stack), and
    itself."""
    positions = torch.arange(pops.size(1), device=pops.device)
    return (pops[:, None, :] == positions[None, :, None]) | torch.eye(
        pops.size(1), dtype=torch.bool, device=pops.device)[None]


def written_tree_mask(tokens: Tensor, open_id: int, close_id: int) -> Tensor:
    """(bsz, tgt, tgt) True where each position of ``tokens`` (a decoder's input, ``</s>``
    first) may attend: COMPOSE for the closing brackets that close a constituent, STACK for the
    rest (Sartran et al., TACL 2022, Section 3.1, with the closing bracket written once)."""
    return masks_of_depths(*tree_depths(tokens, open_id, close_id))


def masks_of_depths(depth: Tensor, composes: Tensor) -> Tensor:
    """``written_tree_mask`` of the sequences whose ``tree_depths`` are given."""
    pops = pop_positions(depth, composes)
    return torch.where(composes[:, :, None], compose_mask(pops), stack_mask(pops))


def depth_differences(query_levels: Tensor, key_levels: Tensor, clip: int) -> Tensor:
    """(bsz, queries, keys) the query's depth in the tree less the key's, clipped to
    [-clip, clip]: Transformer Grammars' relative positions (Sartran et al., TACL 2022,
    Section 3.2, where they replace Transformer-XL's linear distances), here each position's
    level."""
    return (query_levels[:, :, None] - key_levels[:, None, :]).clamp(-clip, clip)


class WrittenTreeMasks(NamedTuple):
    """What the decoder's self-attention reads of the written tree for one pass."""

    allowed: Tensor  # (bsz, queries, keys): True where a query may attend
    query_levels: Tensor  # (bsz, queries): each query's level (depth after it)
    key_levels: Tensor  # (bsz, keys)


@with_incremental_state
class WrittenTreeState(nn.Module):
    """The written tree's masks for a decoder: in full for a whole sequence, or advanced a
    token at a time in incremental decoding, where each hypothesis's stack (which positions are
    on it, at what level) lives in fairseq's incremental state, reordered with the beam."""

    def __init__(self, open_id: int, close_id: int):
        super().__init__()
        self.open_id, self.close_id = open_id, close_id

    def forward(self, tokens: Tensor,
                incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None
                ) -> WrittenTreeMasks:
        """The masks and levels of the queries: every position of ``tokens`` (bsz, tgt), or in
        incremental decoding the last one only."""
        if incremental_state is None:
            depth, composes = tree_depths(tokens, self.open_id, self.close_id)
            return WrittenTreeMasks(masks_of_depths(depth, composes), depth, depth)
        stack = self.get_incremental_state(incremental_state, "stack")
        if stack is None:  # the first step: the stack of the prefix before the last token
            stack = self.prefix_stack(tokens[:, :-1])
        on_stack, levels, row = self.advance(stack["on_stack"], stack["levels"], tokens[:, -1])
        self.set_incremental_state(incremental_state, "stack",
                                   {"on_stack": on_stack, "levels": levels})
        return WrittenTreeMasks(row[:, None, :], levels[:, -1:], levels)

    def prefix_stack(self, tokens: Tensor) -> Dict[str, Tensor]:
        """The stack once ``tokens`` (bsz, tgt) are read: which positions are on it, and the
        level of each."""
        depth, composes = tree_depths(tokens, self.open_id, self.close_id)
        if tokens.size(1) == 0:
            return {"on_stack": tokens.new_zeros(tokens.shape, dtype=torch.bool), "levels": depth}
        return {"on_stack": pop_positions(depth, composes) == NEVER, "levels": depth}

    def advance(self, on_stack: Tensor, levels: Tensor,
                token: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        """Read one more ``token`` (bsz,) on the stack of the positions before it; returns the
        new (on_stack, levels) and the token's row of the mask, (bsz, tgt + 1): COMPOSE for a
        closing bracket that closes a constituent (what it pops, at the level it closes), STACK
        for the rest (Sartran et al., TACL 2022, Section 3.1)."""
        before = levels[:, -1] if levels.size(1) else levels.new_zeros(token.size(0))
        composes = (token == self.close_id) & (before > 0)
        level = before + (token == self.open_id).long() - composes.long()
        popped = on_stack & (levels == before[:, None]) & composes[:, None]
        row = torch.where(composes[:, None], popped, on_stack)
        itself = on_stack.new_ones(token.size(0), 1)
        return (torch.cat([on_stack & ~popped, itself], dim=1),
                torch.cat([levels, level[:, None]], dim=1), torch.cat([row, itself], dim=1))

    def reorder_incremental_state(self, incremental_state, new_order: Tensor):
        stack = self.get_incremental_state(incremental_state, "stack")
        if stack is not None:
            self.set_incremental_state(incremental_state, "stack", {
                name: value.index_select(0, new_order) for name, value in stack.items()})
        return incremental_state
