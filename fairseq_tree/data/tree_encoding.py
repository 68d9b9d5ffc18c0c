"""Turning a normalised tree into the three integer sequences the tree model reads.

A source example is stored as three aligned items (see ``TreeLanguagePairDataset``):

* leaves: dictionary ids of the n leaf tokens followed by EOS, exactly a stock fairseq source
  sentence, so ``--tree-input leaves-only`` is plain fairseq translation;
* labels: dictionary ids of the m node labels, in the tree's pre-order;
* spans:  the m ``[start, end)`` leaf spans (indices into the leaves, EOS never covered).

and, only when asked for (``fairseq-tree-preprocess --leaf-tags``), a fourth:

* tags: dictionary ids of the leaves' POS tags (``[TAG]``, as labels are written: see
  ``label_dictionary``), aligned with the leaves and EOS; ``pad`` where a leaf has no tag (a
  subword piece, a bare token) and at EOS.
"""

from dataclasses import dataclass
from typing import Optional

import torch
from fairseq.data import Dictionary

from fairseq_tree.data.label_dictionary import label_symbol
from fairseq_tree.trees.normal_form import NormalTree


@dataclass
class EncodedTree:
    leaves: torch.Tensor  # (n + 1,) leaf ids, EOS last
    labels: torch.Tensor  # (m,) node label ids
    spans: torch.Tensor  # (m, 2) [start, end) leaf spans
    tags: Optional[torch.Tensor] = None  # (n + 1,) POS tag ids, pad where none and at EOS

    @property
    def num_leaves(self) -> int:
        return len(self.leaves) - 1

    @property
    def num_nodes(self) -> int:
        return len(self.labels)


def encode_tree(tree: NormalTree, dictionary: Dictionary) -> EncodedTree:
    """Look up leaves and labels in ``dictionary`` (unknown symbols become ``<unk>``)."""
    leaf_ids = [dictionary.index(token) for token in tree.leaves] + [dictionary.eos()]
    label_ids = [dictionary.index(label_symbol(node.label)) for node in tree.nodes]
    spans = [(node.start, node.end) for node in tree.nodes]
    tag_ids = [dictionary.pad() if tag is None else dictionary.index(label_symbol(tag))
               for tag in tree.tags] + [dictionary.pad()]
    return EncodedTree(
        leaves=torch.tensor(leaf_ids, dtype=torch.long),
        labels=torch.tensor(label_ids, dtype=torch.long),
        spans=torch.tensor(spans, dtype=torch.long).view(-1, 2),
        tags=torch.tensor(tag_ids, dtype=torch.long),
    )
