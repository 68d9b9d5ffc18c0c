"""Trees induced by a constituent_transformer masked LM (Wang et al., 2019, Algorithm 1).

The model reads each sentence as fairseq's masked_lm task builds a sample, ``<s> units </s>``,
one unit per word: the word itself, or with ``bpe_codes`` its first subword-nmt piece (as
``fairseq-tree-bpe apply --text --first-piece`` wrote the model's training text, and as the
authors' code keeps only a word's first WordPiece). Its link probabilities between consecutive
words (the links to ``<s>`` and ``</s>`` are not used) give the tree by Algorithm 1; every node
is labelled ``X`` and the leaves are the input tokens. A sentence longer than the model's
positions becomes a counted flat tree.
"""

import logging
import os

from fairseq_tree.data.bpe import build_segmenter
from fairseq_tree.parsing.base import Failure, Parser, ParserUnavailable
from fairseq_tree.trees.induction import THRESHOLD, induced_tree
from fairseq_tree.trees.subwords import first_pieces

logger = logging.getLogger(__name__)
MODEL_NAME = "constituent_transformer"
# Section 7.3 / Figure 4(a): m = 3 gave the best trees, counting layers from 1 (Figure 5's "first
# layer" is (a)); the authors' code, whose layers count from 0, parses with min_layer = 2.
MIN_LAYER = 2
FLAGS = {"checkpoint": "--induced-checkpoint", "dictionary": "--induced-dict"}


def load_model(checkpoint: str, dictionary: str | None):
    """The checkpoint's hub (``ConstituentTransformerModel.from_pretrained``); its problems said
    with the flag that named the file."""
    from fairseq_tree.models.constituent_transformer import ConstituentTransformerModel
    from fairseq_tree.models.masked_lm_hub import MaskedLMCheckpointError

    try:
        return ConstituentTransformerModel.from_pretrained(
            os.path.dirname(checkpoint), os.path.basename(checkpoint), dictionary)
    except MaskedLMCheckpointError as err:
        raise ParserUnavailable(f"{FLAGS[err.argument]} {err}") from None


class InducedParser(Parser):
    """Algorithm 1 on the link probabilities of a constituent_transformer checkpoint."""

    name = "induced"

    def __init__(self, lang: str = "", induced_checkpoint: str | None = None,
                 induced_dict: str | None = None, induced_bpe_codes: str | None = None,
                 induced_min_layer: int = MIN_LAYER, induced_threshold: float = THRESHOLD):
        if not induced_checkpoint:
            raise ParserUnavailable("--parser induced needs --induced-checkpoint (a "
                                    f"{MODEL_NAME} masked LM checkpoint)")
        self.model = load_model(induced_checkpoint, induced_dict)
        layers = self.model.num_layers
        if not 0 <= induced_min_layer < layers:
            raise ParserUnavailable(f"--induced-min-layer {induced_min_layer}: the model has "
                                    f"layers 0-{layers - 1}")
        if not 0 < induced_threshold <= 1:
            raise ParserUnavailable(f"--induced-threshold {induced_threshold}: not in (0, 1]")
        self.min_layer, self.threshold = induced_min_layer, induced_threshold
        # the BPE of fairseq-tree-bpe, which made the training text
        self.segment = build_segmenter(induced_bpe_codes) if induced_bpe_codes \
            else (lambda words: words)
        self.units = self.unknown = 0

    def encode(self, tokens: list[str]):
        """``<s> units </s>`` as the model's ids, the unknown units counted."""
        ids = self.model.encode(first_pieces(tokens, self.segment))
        self.units += len(ids) - 2
        self.unknown += ids.eq(self.model.dictionary.unk()).sum().item()
        return ids

    def _parse_tokens(self, batch):
        encoded = [self.encode(tokens) for tokens in batch]
        limit = self.model.max_positions()
        fits = [i for i, ids in enumerate(encoded) if len(ids) <= limit]
        results: list[str | Failure] = [Failure(f"longer than the model's {limit} positions")
                                        ] * len(batch)
        links_of_fits = self.model.link_probabilities([encoded[i] for i in fits]) if fits else []
        for i, links in zip(fits, links_of_fits):
            results[i] = induced_tree(links, batch[i], self.min_layer, self.threshold)
        return results

    def close(self):
        if self.units:
            logger.info(f"induced: {self.unknown} of {self.units} word units "
                        f"({100 * self.unknown / self.units:.1f}%) were not in the dictionary")
