"""Dataset pieces of tree classification: node spans and per-unit class targets, collated to the
shapes the tree encoder's output has (see ``tree_classification``), and in-memory examples read
as the binarized ones are (inference)."""

from typing import List, Optional

import numpy as np
import torch
from fairseq.data import (
    BaseWrapperDataset,
    ConcatSentencesDataset,
    PrependTokenDataset,
    SortDataset,
    data_utils,
)
from fairseq.data.list_dataset import ListDataset

from fairseq_tree.data.complete_batches import KeepsLastBatch

# Target of a leaf or node that has no class (nll_loss's default ignore_index).
NO_CLASS = -100


class PaddedSpansDataset(BaseWrapperDataset):
    """Node spans (2m ints per example) collated to B x M x 2, padded with the empty span
    [0, 0), which covers no leaf. Leaves are right-padded here, so spans need no shift."""

    def __getitem__(self, index):
        return self.dataset[index].long().view(-1, 2)

    def collater(self, samples):
        flat = data_utils.collate_tokens([s.view(-1) for s in samples], pad_idx=0)
        return flat.view(len(samples), -1, 2)


class UnitTargetsDataset(BaseWrapperDataset):
    """One part of the per-unit targets (``fairseq-tree-preprocess --node-targets``): the class
    of each leaf (``part="leaves"``: n classes plus ``NO_CLASS`` for the EOS column, aligned with
    ``src_tokens``) or of each node (``part="nodes"``, aligned with ``src_node_labels``).

    The stored items are class-dictionary ids of the n leaves then the m nodes, ``pad`` where a
    unit has no class; here they become class indices (id - nspecial) and ``NO_CLASS``.
    """

    def __init__(self, unit_targets, num_leaves: np.ndarray, part: str, pad: int, nspecial: int):
        super().__init__(unit_targets)
        self.num_leaves, self.part, self.pad, self.nspecial = num_leaves, part, pad, nspecial

    def __getitem__(self, index):
        ids = self.dataset[index].long()
        classes = torch.where(ids == self.pad, NO_CLASS, ids - self.nspecial)
        n = int(self.num_leaves[index])
        if self.part == "nodes":
            return classes[n:]
        return torch.cat([classes[:n], classes.new_full((1,), NO_CLASS)])

    def collater(self, samples):
        return data_utils.collate_tokens(samples, pad_idx=NO_CLASS)


class CompleteSortDataset(KeepsLastBatch, SortDataset):
    """fairseq's ``SortDataset`` (what ``sentence_prediction`` batches) with ``KeepsLastBatch``."""


class LeafHeadsDataset(BaseWrapperDataset):
    """Dependency heads (``fairseq-tree-preprocess --dependency-heads``: n 0-based heads, -1 at
    the root) collated to B x N like ``src_tokens``: -1 at the EOS column and at padding. The
    leaves are right-padded, so a leaf's index is its column."""

    def __getitem__(self, index):
        heads = self.dataset[index].long()
        return torch.cat([heads, heads.new_full((1,), -1)])

    def collater(self, samples):
        return data_utils.collate_tokens(samples, pad_idx=-1)


def in_memory(items: List[torch.Tensor]) -> ListDataset:
    """In-memory items as a dataset with sizes, as an indexed dataset gives them."""
    return ListDataset(items, np.array([len(item) for item in items], dtype=np.int64))


def sentence_prediction_tokens(input0: List[torch.Tensor],
                               input1: Optional[List[torch.Tensor]] = None,
                               init_token: Optional[int] = None,
                               separator_token: Optional[int] = None):
    """What fairseq's ``SentencePredictionTask.load_dataset`` reads of in-memory leaves
    (``--tree-input leaves-only`` inference): ``init_token`` before input0, ``separator_token``
    before input1, the two concatenated."""
    src_tokens = in_memory(input0)
    if init_token is not None:
        src_tokens = PrependTokenDataset(src_tokens, init_token)
    if input1 is None:
        return src_tokens
    second = in_memory(input1)
    if separator_token is not None:
        second = PrependTokenDataset(second, separator_token)
    return ConcatSentencesDataset(src_tokens, second)
