"""Dataset pieces of tree classification: node spans and per-unit class targets, collated to the
shapes the tree encoder's output has (see ``tree_classification``)."""

import numpy as np
import torch
from fairseq.data import BaseWrapperDataset, SortDataset, data_utils

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
