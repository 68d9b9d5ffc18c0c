"""Trees without their one-leaf nodes: ``--drop-single-leaf-nodes`` of ``tree_translation``.

A gold tree written with POS preterminals keeps a node over every one-word phrase,
``(VP (VBD laughs))``; the same tree written with bare words, ``(VP laughs)``, has none: the
normal form makes ``VP`` the word's tag (``trees/normal_form.py``). The option makes the tree
model read the first as the second (tags aside: ``tree_translation`` reads none), on the
binarized data and on every inference input alike, so that one data-bin serves both tree
shapes. With subwords a node spans pieces: the node over a one-word phrase of several pieces
is kept.
"""

import numpy as np
import torch
from fairseq.data import FairseqDataset


def multi_leaf_nodes(labels: torch.Tensor, spans: torch.Tensor):
    """The labels (m,) and spans (m, 2) of the nodes that span more than one leaf, in order."""
    keep = (spans[:, 1] - spans[:, 0]) > 1
    return labels[keep], spans[keep]


class MultiLeafNodesDataset(FairseqDataset):
    """The node labels (``part="labels"``) or flat spans (``part="spans"``) of aligned label and
    span datasets (``fairseq-tree-preprocess``'s), their one-leaf nodes left out; ``sizes`` count
    what is kept, as the datasets they replace count theirs (a label a node, two ints a span)."""

    PARTS = ("labels", "spans")

    def __init__(self, labels, spans, part: str):
        if part not in self.PARTS:
            raise ValueError(f"part must be one of {self.PARTS}, not {part!r}")
        self.labels, self.spans, self.part = labels, spans, part
        kept = np.fromiter((int(((s[1::2] - s[0::2]) > 1).sum()) for s in
                            (spans[i] for i in range(len(spans)))),
                           dtype=np.int64, count=len(spans))
        self.sizes = kept if part == "labels" else 2 * kept

    def __getitem__(self, index: int) -> torch.Tensor:
        labels, spans = multi_leaf_nodes(self.labels[index], self.spans[index].view(-1, 2))
        return labels if self.part == "labels" else spans.reshape(-1)

    def __len__(self) -> int:
        return len(self.sizes)

    def num_tokens(self, index: int) -> int:
        return int(self.sizes[index])

    def size(self, index: int) -> int:
        return int(self.sizes[index])

    @property
    def supports_prefetch(self):
        return False
