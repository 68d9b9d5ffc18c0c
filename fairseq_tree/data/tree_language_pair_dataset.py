"""A fairseq ``LanguagePairDataset`` whose source side is a tree: leaves, node labels, node spans."""

from typing import Dict, List

import numpy as np
import torch
from fairseq.data import LanguagePairDataset

from fairseq_tree.data.complete_batches import KeepsLastBatch
from fairseq_tree.data.tree_paths import embedding_paths


class TreeLanguagePairDataset(KeepsLastBatch, LanguagePairDataset):
    """Pairs of (source tree, target sentence).

    The source tree of example i is ``src[i]`` (leaf ids + EOS, a stock fairseq source sentence),
    ``node_labels[i]`` (m label ids) and ``node_spans[i]`` (2m ints: ``[start, end)`` pairs indexing
    the leaves). Sizes, batching by ``--max-tokens`` and filtering by ``--max-source-positions``
    all count a source as n + m tokens (leaves + EOS + nodes), the length the tree encoder reads;
    with ``count_nodes`` False as its n leaves and EOS alone, as fairseq's datasets count the
    leaves-only baseline's sources, so that both hold the same sentences a batch. The batching
    order sorts sources by their leaves (``ordered_indices``).
    No example is lost to batching (``KeepsLastBatch``).

    The collated ``net_input`` adds to fairseq's ``src_tokens``/``src_lengths``:

    * ``src_node_labels`` (B x M): label ids, padded with ``pad``;
    * ``src_node_spans`` (B x M x 2): spans as *column indices into* ``src_tokens`` (shifted by the
      left padding where ``left_pad_source``), padded with the empty span ``[0, 0)``, so a padded
      node covers no leaf and a real node never covers a padded leaf;
    * ``src_embedding_paths`` (P x 6): the paths of the hierarchical embeddings of those spans
      (``tree_paths.embedding_paths``, each with its batch row), computed here, on the CPU, so
      that the model does not wait for the device to count them.
    """

    def __init__(self, src, src_sizes, src_dict, node_labels, node_spans, *args,
                 count_nodes: bool = True, **kwargs):
        node_counts = np.asarray(node_labels.sizes, dtype=np.int64) if count_nodes else 0
        super().__init__(src, np.asarray(src_sizes) + node_counts, src_dict, *args, **kwargs)
        if len(node_labels) != len(src) or len(node_spans) != len(src):
            raise ValueError(
                f"tree datasets disagree in length: {len(src)} sources, "
                f"{len(node_labels)} label items, {len(node_spans)} span items"
            )
        self.node_labels = node_labels
        self.node_spans = node_spans
        self.leaf_sizes = np.asarray(src_sizes)

    def ordered_indices(self):
        """fairseq's batching order (by source length, then target length, ties shuffled) with
        the source measured in leaves: sorting by n + m would put trees of one total but
        different shares of leaves and nodes together, and the encoder pads leaves and nodes
        each to the batch's longest (over 380 updates of the quickstart, 7% more encoder
        positions than sorting by leaves: bench/RESULTS.md). The leaves-only baseline on the
        same trees then trains on the same batches."""
        indices = (np.random.permutation(len(self)) if self.shuffle
                   else np.arange(len(self))).astype(np.int64)
        if self.tgt_sizes is not None:
            indices = indices[np.argsort(self.tgt_sizes[indices], kind="mergesort")]
        return indices[np.argsort(self.leaf_sizes[indices], kind="mergesort")]

    def __getitem__(self, index: int) -> Dict:
        example = super().__getitem__(index)
        spans = self.node_spans[index].long().view(-1, 2)
        if self.append_bos:  # a BOS was prepended to the leaves
            spans = spans + 1
        example["node_labels"] = self.node_labels[index].long()
        example["node_spans"] = spans
        return example

    def collater(self, samples: List[Dict], pad_to_length=None) -> Dict:
        batch = super().collater(samples, pad_to_length=pad_to_length)
        if not batch:
            return batch
        by_id = {sample["id"]: sample for sample in samples}
        ordered = [by_id[int(i)] for i in batch["id"]]  # the order fairseq's collate sorted into
        labels, spans = collate_nodes(
            ordered, self.src_dict.pad(), batch["net_input"]["src_tokens"],
            batch["net_input"]["src_lengths"], self.left_pad_source,
        )
        batch["net_input"]["src_node_labels"] = labels
        batch["net_input"]["src_node_spans"] = spans
        batch["net_input"]["src_embedding_paths"] = embedding_paths(spans)
        return batch

    @property
    def supports_prefetch(self):
        return super().supports_prefetch and all(
            getattr(ds, "supports_prefetch", False) for ds in (self.node_labels, self.node_spans)
        )

    def prefetch(self, indices):
        super().prefetch(indices)
        self.node_labels.prefetch(indices)
        self.node_spans.prefetch(indices)


def collate_nodes(samples: List[Dict], pad_idx: int, src_tokens, src_lengths, left_pad: bool):
    """Pad the ``node_labels``/``node_spans`` of ``samples`` (in batch row order) to B x M.

    Labels are padded with ``pad_idx``, spans with the empty span [0, 0). Spans are shifted to
    column indices of ``src_tokens`` (B x T) when its rows are left-padded.

    Returns:
        labels: LongTensor B x M
        spans:  LongTensor B x M x 2
    """
    max_nodes = max(len(s["node_labels"]) for s in samples)
    labels = torch.full((len(samples), max_nodes), pad_idx, dtype=torch.long)
    spans = torch.zeros((len(samples), max_nodes, 2), dtype=torch.long)
    for row, sample in enumerate(samples):
        m = len(sample["node_labels"])
        labels[row, :m] = sample["node_labels"]
        spans[row, :m] = sample["node_spans"]
    if left_pad:
        leaf_offset = (src_tokens.size(1) - src_lengths.cpu()).view(-1, 1, 1)  # B x 1 x 1
        real = (spans[:, :, 1] > spans[:, :, 0]).unsqueeze(-1)  # B x M x 1
        spans = spans + leaf_offset * real
    return labels, spans
