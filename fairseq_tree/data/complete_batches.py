"""Batching that keeps every example."""

import numpy as np
from fairseq.data import LanguagePairDataset


class KeepsLastBatch:
    """Mixin for fairseq datasets: ``batch_by_size`` without losing the last batch.

    fairseq's ``data_utils.batch_by_size`` drops a last batch whose size is not a multiple of
    ``--required-batch-size-multiple`` (8 by default; fairseq issue #5036), so fairseq-generate
    silently skips up to 7 test sentences (every run with ``--batch-size 1`` loses one). Batches
    are cut from the ordered indices in order, so what was dropped is their tail: it comes back
    as one last batch, which already met the size limits.
    """

    def batch_by_size(self, indices, max_tokens=None, max_sentences=None,
                      required_batch_size_multiple=1):
        batches = super().batch_by_size(
            indices, max_tokens, max_sentences, required_batch_size_multiple
        )
        kept = sum(len(batch) for batch in batches)
        if kept < len(indices):
            batches = list(batches) + [np.asarray(indices[kept:], dtype=np.int64)]
        return batches

    @classmethod
    def from_dataset(cls, dataset):
        """The same dataset (shared state, no copy of data) with ``KeepsLastBatch``; ``cls``
        mixes it into the dataset's class."""
        complete = cls.__new__(cls)
        complete.__dict__.update(vars(dataset))
        return complete


class CompleteLanguagePairDataset(KeepsLastBatch, LanguagePairDataset):
    """fairseq's ``LanguagePairDataset`` (the ``--tree-input leaves-only`` baseline) with
    ``KeepsLastBatch``."""
