"""fairseq's generator for models that write trees: well-formed trees by construction, and a
tally of the malformed ones.

``WellFormedTrees`` masks the log-probabilities of each hypothesis at each step to the tokens
that ``data.tree_grammar`` allows after its prefix, so that fairseq's search (beam, sampling,
diverse beam ...) only ever extends a hypothesis into a well-formed tree. It sits in the one
per-step slot that fairseq's ``SequenceGenerator`` gives (``repeat_ngram_blocker``: called with
the hypotheses' tokens and log-probabilities after fairseq's own masks, before the search
step), around the n-gram blocker when one is asked for. Its state (depth, last token) is read
from the tokens fairseq hands it, which fairseq itself reorders with the beams. The tokens
buffer is as wide as fairseq's length limit allows (``max_len + 2``): a hypothesis never opens
more than it can close before fairseq forces the end of sentence, and closes in time.

The scores stay the model's: the mask does not renormalize what remains, so a hypothesis's
score (and fairseq-generate's P- line, one score per written token, brackets and labels
included) is the model's log-probability of what it wrote. Where fairseq itself leaves a
hypothesis none of the tokens the grammar allows (a ``--prefix-size`` prefix that cannot be
closed before the length limit; ``--no-repeat-ngram-size`` blocking the only closing bracket),
fairseq's choice stands, and the tree may be malformed: the task's tally counts it.
"""

import math
import re
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn as nn
from fairseq.sequence_generator import SequenceGenerator, SequenceGeneratorWithAlignment

from fairseq_tree.data.tree_grammar import TreeGrammar


class WellFormedTrees(nn.Module):
    """fairseq's per-step hook (the signature of its ``NGramRepeatBlock``): ``lprobs`` (bsz *
    beam, V) with every token that would make the written tree malformed at -inf; ``inner``
    (the n-gram blocker or None) applied first."""

    def __init__(self, grammar: TreeGrammar, inner: Optional[nn.Module] = None):
        super().__init__()
        self.grammar = grammar
        self.inner = inner

    def forward(self, tokens: torch.Tensor, lprobs: torch.Tensor, bsz: int, beam_size: int,
                step: int) -> torch.Tensor:
        if self.inner is not None:
            lprobs = self.inner(tokens, lprobs, bsz, beam_size, step)
        # fairseq's buffer holds the beginning of sentence, max_len tokens and the end of
        # sentence, which it forces at step max_len
        max_len = tokens.size(1) - 2
        allowed = self.grammar.allowed_tokens(tokens[:, :step + 1], max_len - step)
        masked = lprobs.masked_fill(~allowed, -math.inf)
        # a row fairseq left without an allowed token keeps fairseq's choice
        stuck = ~torch.isfinite(masked).any(dim=-1)
        if stuck.any():
            masked[stuck] = lprobs[stuck]
        return masked


class TreeWriting:
    """What a generator of trees adds to fairseq's: ``WellFormedTrees`` in its per-step slot
    (unless ``well_formed`` is False)."""

    def __init__(self, *args, tree_grammar: TreeGrammar, well_formed: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        if well_formed:
            self.repeat_ngram_blocker = WellFormedTrees(tree_grammar, self.repeat_ngram_blocker)


class TreeSequenceGenerator(TreeWriting, SequenceGenerator):
    """fairseq's ``SequenceGenerator`` writing well-formed trees."""


class TreeSequenceGeneratorWithAlignment(TreeWriting, SequenceGeneratorWithAlignment):
    """fairseq's ``SequenceGeneratorWithAlignment`` (``--print-alignment``) writing well-formed
    trees."""


def writes_well_formed(generator) -> bool:
    """Whether ``generator`` keeps the trees it writes well formed."""
    return isinstance(getattr(generator, "repeat_ngram_blocker", None), WellFormedTrees)


# the tally as the task logs it after each batch (``WrittenTrees.report``)
REPORT = re.compile(r"malformed trees: \d+ of this batch's \d+ best hypotheses, (\d+) of (\d+) "
                    r"so far \(well-formed trees (on|off)\)")


@dataclass
class WrittenTrees:
    """A tally of the best hypotheses written as trees and of the malformed ones among them."""

    written: int = 0
    malformed: int = 0

    def add(self, grammar: TreeGrammar, hypos) -> "WrittenTrees":
        """Count the best hypothesis of each sentence of ``hypos`` (fairseq's output of a
        batch); the batch's own tally."""
        batch = WrittenTrees()
        for sentence in hypos:
            if sentence:
                batch.written += 1
                batch.malformed += not grammar.is_well_formed(sentence[0]["tokens"])
        self.written += batch.written
        self.malformed += batch.malformed
        return batch

    def report(self, batch: "WrittenTrees", well_formed: bool) -> str:
        """The line logged after a batch (``batch``, its own tally) is counted in."""
        return (f"malformed trees: {batch.malformed} of this batch's {batch.written} best "
                f"hypotheses, {self.malformed} of {self.written} so far (well-formed trees "
                f"{'on' if well_formed else 'off'})")

    @staticmethod
    def last_reported(text: str) -> Optional[dict]:
        """The last tally ``report`` logged in ``text`` (a fairseq-generate log): {"malformed",
        "written", "well_formed"}; None where there is none (a model that writes text)."""
        found = REPORT.findall(text)
        if not found:
            return None
        malformed, written, state = found[-1]
        return {"malformed": int(malformed), "written": int(written),
                "well_formed": state == "on"}
