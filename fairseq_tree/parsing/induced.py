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

import torch

from fairseq_tree.parsing.base import Failure, Parser, ParserUnavailable
from fairseq_tree.trees.induction import THRESHOLD, induced_tree
from fairseq_tree.trees.subwords import first_pieces

logger = logging.getLogger(__name__)
MODEL_NAME = "constituent_transformer"
# Section 7.3 / Figure 4(a): m = 3 gave the best trees, counting layers from 1 (Figure 5's "first
# layer" is (a)); the authors' code, whose layers count from 0, parses with min_layer = 2.
MIN_LAYER = 2


def read_checkpoint(path: str) -> dict:
    """The checkpoint's state, checked to be a constituent_transformer masked LM."""
    import fairseq_tree.models  # noqa: F401  (registers the model)
    from fairseq import checkpoint_utils
    from fairseq.models import ARCH_MODEL_NAME_REGISTRY

    if not os.path.isfile(path):
        raise ParserUnavailable(f"--induced-checkpoint {path}: no such file")
    try:
        state = checkpoint_utils.load_checkpoint_to_cpu(path)
        arch = getattr(state["cfg"].model, "arch", None) or getattr(state["cfg"].model, "_name")
    except Exception as err:  # torch.load raises many kinds for a file that is no checkpoint
        raise ParserUnavailable(f"--induced-checkpoint {path}: not a fairseq checkpoint "
                                f"({type(err).__name__}: {err})") from None
    if ARCH_MODEL_NAME_REGISTRY.get(arch) != MODEL_NAME:
        raise ParserUnavailable(f"--induced-checkpoint {path}: its model is {arch!r}, not a "
                                f"{MODEL_NAME} masked LM (train one with --task masked_lm "
                                f"--arch {MODEL_NAME})")
    return state


def read_dictionary(path: str | None, state: dict, checkpoint: str):
    """The model's dictionary (default: dict.txt of the data folder it was trained on) plus
    masked_lm's ``<mask>``, checked against the size of the model's embeddings."""
    from fairseq.data import Dictionary

    path = path or os.path.join(state["cfg"].task.data.split(os.pathsep)[0], "dict.txt")
    if not os.path.isfile(path):
        raise ParserUnavailable(f"--induced-dict {path}: no such file (give the dict.txt of the "
                                "data the model was trained on)")
    try:
        dictionary = Dictionary.load(path)
    except (ValueError, RuntimeError) as err:
        reason = " ".join(str(err).split())  # fairseq's message quotes the line, line break and all
        raise ParserUnavailable(f"--induced-dict {path}: not a fairseq dictionary ({reason})"
                                ) from None
    dictionary.add_symbol("<mask>")
    rows = state["model"]["encoder.sentence_encoder.embed_tokens.weight"].size(0)
    if len(dictionary) != rows:
        raise ParserUnavailable(f"--induced-dict {path}: {len(dictionary)} symbols with <mask>, "
                                f"but {checkpoint} was trained with {rows}: not its dictionary")
    return dictionary


def build_model(state: dict, dictionary):
    """The masked LM of the checkpoint, in eval mode, on the GPU when there is one."""
    from fairseq.tasks.masked_lm import MaskedLMTask

    task = MaskedLMTask(state["cfg"].task, dictionary)
    model = task.build_model(state["cfg"].model)
    model.load_state_dict(state["model"], strict=True)
    return model.eval().to("cuda" if torch.cuda.is_available() else "cpu")


class InducedParser(Parser):
    """Algorithm 1 on the link probabilities of a constituent_transformer checkpoint."""

    name = "induced"

    def __init__(self, lang: str = "", induced_checkpoint: str | None = None,
                 induced_dict: str | None = None, induced_bpe_codes: str | None = None,
                 induced_min_layer: int = MIN_LAYER, induced_threshold: float = THRESHOLD):
        if not induced_checkpoint:
            raise ParserUnavailable("--parser induced needs --induced-checkpoint (a "
                                    f"{MODEL_NAME} masked LM checkpoint)")
        state = read_checkpoint(induced_checkpoint)
        self.dictionary = read_dictionary(induced_dict, state, induced_checkpoint)
        self.model = build_model(state, self.dictionary)
        layers = len(self.model.encoder.sentence_encoder.layers)
        if not 0 <= induced_min_layer < layers:
            raise ParserUnavailable(f"--induced-min-layer {induced_min_layer}: the model has "
                                    f"layers 0-{layers - 1}")
        if not 0 < induced_threshold <= 1:
            raise ParserUnavailable(f"--induced-threshold {induced_threshold}: not in (0, 1]")
        self.min_layer, self.threshold = induced_min_layer, induced_threshold
        self.segment = self.first_piece_segmenter(induced_bpe_codes)
        self.units = self.unknown = 0

    @staticmethod
    def first_piece_segmenter(codes: str | None):
        if not codes:
            return lambda words: words
        from subword_nmt.apply_bpe import BPE

        with open(codes, encoding="utf-8") as handle:
            return BPE(handle).segment_tokens

    def encode(self, tokens: list[str]) -> torch.Tensor:
        """``<s> units </s>`` as the model's ids."""
        ids = [self.dictionary.index(unit) for unit in first_pieces(tokens, self.segment)]
        self.units += len(ids)
        self.unknown += ids.count(self.dictionary.unk())
        return torch.tensor([self.dictionary.bos(), *ids, self.dictionary.eos()])

    @torch.no_grad()
    def word_links(self, batch: list[torch.Tensor]) -> list[list[list[float]]]:
        """For each sentence, the links between its words at every layer: L x (words - 1)."""
        from fairseq.data.data_utils import collate_tokens

        device = next(self.model.parameters()).device
        tokens = collate_tokens(batch, self.dictionary.pad()).to(device)
        _, extra = self.model.encoder.extract_features(tokens)
        links = extra["link_probabilities"].float().cpu()  # L x B x (T-1)
        # Word j sits at position j + 1 (after <s>); links 1 .. words-1 join word j and j + 1.
        return [links[:, row, 1:len(ids) - 2].tolist() for row, ids in enumerate(batch)]

    def _parse_tokens(self, batch):
        encoded = [self.encode(tokens) for tokens in batch]
        limit = self.model.max_positions()
        fits = [i for i, ids in enumerate(encoded) if len(ids) <= limit]
        results: list[str | Failure] = [Failure(f"longer than the model's {limit} positions")
                                        ] * len(batch)
        for i, links in zip(fits, self.word_links([encoded[i] for i in fits]) if fits else []):
            results[i] = induced_tree(links, batch[i], self.min_layer, self.threshold)
        return results

    def close(self):
        if self.units:
            logger.info(f"induced: {self.unknown} of {self.units} word units "
                        f"({100 * self.unknown / self.units:.1f}%) were not in the dictionary")
