"""What a written tree may hold next: the grammar of a linearized target tree, for decoding
that writes well-formed trees by construction and for counting the malformed ones.

A written tree is ``[(] [S] [(] [NP] the dog [)] barked [)] </s>`` (``linearized_tree``). It is
well formed when

* a label follows each opening bracket, and a label stands nowhere else;
* a closing bracket closes an open constituent that holds something (it follows a leaf or a
  closing bracket, so every constituent spans at least one leaf, as every node of the normal
  form does);
* the end of sentence comes when no constituent is open, after a leaf or a closing bracket (so
  a written tree has at least one leaf).

A tree need not have one root: a sentence may be written as bare leaves, or as several
constituents side by side, as the normal form gives them (a one-word tree loses its
preterminal and its ROOT wrapper; a parser that splits a line into sentences gives several
roots), and models learn such targets. A unary chain (``[(] [NP] [(] [N] dog [)] [)]``) is
allowed: the normal form would read it as one node, the outer label kept.

The state of a prefix is its depth (constituents open) and the kind of its last token, both
read from the prefix itself (``prefix_states``): in beam search they stay in step with fairseq's
reordering of hypotheses without being carried. ``allowed_kinds`` says which kinds of token may
come next, ``remaining`` tokens before the end of sentence must come: a hypothesis never opens
what it could not close in time.
"""

from typing import Iterable

import torch

# Token kinds. START stands for the beginning of sentence that every prefix begins with.
LEAF, OPEN, CLOSE, LABEL, END, START = range(6)
TOKEN_KINDS = 5  # the kinds a written token can have (START is none)
# Tokens a constituent needs after its opening bracket before it can close: a label, a leaf.
OPENING_COST = 2


class TreeGrammar:
    """The grammar of a linearized tree over a dictionary of ``size`` symbols: ``open_id`` and
    ``close_id`` the brackets, ``label_ids`` the label symbols, ``eos`` the end of sentence;
    every other symbol is a leaf."""

    def __init__(self, size: int, open_id: int, close_id: int, label_ids: Iterable[int],
                 eos: int):
        kinds = torch.full((size,), LEAF, dtype=torch.long)
        kinds[list(label_ids)] = LABEL
        kinds[open_id], kinds[close_id], kinds[eos] = OPEN, CLOSE, END
        self.kinds, self.eos = kinds, eos

    def token_kinds(self, tokens: torch.Tensor) -> torch.Tensor:
        """The kind of each token id (same shape)."""
        if self.kinds.device != tokens.device:
            self.kinds = self.kinds.to(tokens.device)
        return self.kinds[tokens]

    def prefix_states(self, prefixes: torch.Tensor):
        """(depth, last kind) after each position of ``prefixes`` (N, L), whose column 0 is the
        beginning of sentence: two (N, L) tensors; depth counts the constituents open."""
        kinds = self.token_kinds(prefixes)
        kinds[:, 0] = START
        depth = (kinds == OPEN).long().cumsum(1) - (kinds == CLOSE).long().cumsum(1)
        return depth, kinds

    @staticmethod
    def allowed_kinds(depth: torch.Tensor, last: torch.Tensor,
                      remaining: torch.Tensor) -> torch.Tensor:
        """Which kinds of token may come next (``(..., TOKEN_KINDS)`` bool) after a prefix of
        ``depth`` open constituents ending in a token of kind ``last``, where at most
        ``remaining`` tokens may still come before the end of sentence (the end of sentence
        itself not counted).

        A prefix needs ``depth`` more tokens to finish (its closing brackets), one more after
        a label (a leaf), ``OPENING_COST`` more after an opening bracket (a label and a leaf);
        a token is allowed only where what it leaves to finish fits in what remains after it.
        """
        after_open = last == OPEN
        after_content = (last == LEAF) | (last == CLOSE)
        after = remaining - 1  # what remains once the next token is written
        allowed = torch.stack([
            ~after_open & (depth <= after),  # a leaf
            ~after_open & (depth + 1 + OPENING_COST <= after),  # an opening bracket
            after_content & (depth > 0) & (depth - 1 <= after),  # a closing bracket
            after_open,  # the label of the constituent just opened
            after_content & (depth == 0),  # the end of sentence
        ], dim=-1)
        return allowed

    def allowed_tokens(self, prefixes: torch.Tensor, remaining: int) -> torch.Tensor:
        """(N, V) bool: the tokens that may follow each of ``prefixes`` (N, L), column 0 the
        beginning of sentence, with at most ``remaining`` tokens before the end of sentence."""
        depth, kinds = self.prefix_states(prefixes)
        allowed = self.allowed_kinds(depth[:, -1], kinds[:, -1],
                                     torch.full_like(depth[:, -1], remaining))
        return allowed[:, self.kinds]

    def is_well_formed(self, written: torch.Tensor) -> bool:
        """Whether ``written`` (1-D token ids, the end of sentence last, as fairseq returns a
        hypothesis) is a well-formed tree: each token allowed after the tokens before it."""
        if written.numel() == 0 or int(written[-1]) != self.eos:
            return False
        prefixes = torch.cat([written.new_full((1,), self.eos), written[:-1]]).unsqueeze(0)
        depth, kinds = self.prefix_states(prefixes)
        # no length bound: as many tokens may come as the hypothesis has
        allowed = self.allowed_kinds(depth, kinds, torch.full_like(depth, written.numel()))
        following = self.token_kinds(written).unsqueeze(0)
        return bool(allowed.gather(-1, following.unsqueeze(-1)).all())
