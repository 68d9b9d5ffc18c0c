"""The output tree: a target side written as a bracketed tree (string-to-tree, Aharoni &
Goldberg 2017), the one owner of what that adds to plain target text.

A model that writes trees is trained on the target's linearized tree, as the linearized-tree
baseline reads a source (``linearized_tree``): ``[(] [NP] the dog [)] ...``. Binarized, the
tree's leaves are the stock target dataset (the text a plain model translates into) and its
node labels and spans lie beside it as a source tree's do (``tree_files``); the linearized
sequence is built at load time. What is scored sees the leaves only: the brackets and labels
(``stripped_ids``) are left out of hypotheses and references.

An ``OutputTree`` is made once where the option is read and passed on: the binarizer parses
and writes with one without symbols (no dictionary yet); the task makes its own with the
symbols of its target dictionary, for the datasets, the generator and the hubs.
"""

from typing import Dict, FrozenSet, Iterator, Optional

import numpy as np
import torch
from fairseq.data import data_utils

from fairseq_tree.data.label_dictionary import label_symbol
from fairseq_tree.data.linearized_tree import TOKENS_PER_NODE, TreeSymbols
from fairseq_tree.data.tree_encoding import encode_tree
from fairseq_tree.data.tree_files import LABELS, SPANS, tree_file
from fairseq_tree.trees.normal_form import NormalTree, parse_tree

NODE_PARTS = (LABELS, SPANS)  # what a written tree stores beside its leaves


class OutputTree:
    """The target written as a tree; ``symbols`` its brackets and labels in the target
    dictionary (None for the binarizer, which has no dictionary yet)."""

    # A tree of n leaves has at most 2n - 1 nodes, each written as TOKENS_PER_NODE tokens.
    TOKENS_PER_WORD = 1 + 2 * TOKENS_PER_NODE

    def __init__(self, symbols: Optional[TreeSymbols] = None):
        self.symbols = symbols

    # ------------------------------------------------------------ binarizing

    @staticmethod
    def parse(text: str) -> NormalTree:
        """The tree of one target line; ValueError (a ``TreeSyntaxError`` when malformed) says
        what is wrong."""
        if not text.strip():
            raise ValueError("empty line (expected a bracketed target tree)")
        return parse_tree(text)

    @staticmethod
    def label_symbols(tree: NormalTree) -> Iterator[str]:
        """The dictionary symbols of the tree's node labels (they join the target dictionary)."""
        return (label_symbol(node.label) for node in tree.nodes)

    @staticmethod
    def files(prefix: str) -> Dict[str, str]:
        """{part: dataset path} of the nodes of the written trees beside the target at
        ``prefix``."""
        return {part: tree_file(prefix, part) for part in NODE_PARTS}

    @classmethod
    def count_nodes(cls, prefix: str) -> int:
        """The number of nodes of the written trees binarized beside the target at ``prefix``."""
        labels = data_utils.load_indexed_dataset(cls.files(prefix)[LABELS], None, "mmap")
        return int(np.sum(labels.sizes)) if labels is not None else 0

    # ------------------------------------------------------------ the model's side

    @classmethod
    def load_nodes(cls, prefix: str) -> list:
        """The node labels and spans datasets of the written trees beside the target at
        ``prefix``."""
        parts = []
        for path in cls.files(prefix).values():
            dataset = data_utils.load_indexed_dataset(path, None, "mmap")
            if dataset is None:
                raise FileNotFoundError(
                    f"target tree dataset not found: {path}.{{bin,idx}} (binarize the target "
                    "trees with fairseq-tree-preprocess --target-trees)")
            parts.append(dataset)
        return parts

    def dataset(self, target, labels, spans):
        """The linearized trees of aligned target (leaves), labels and spans datasets."""
        return self.symbols.dataset(target, labels, spans)

    def item(self, tree: NormalTree) -> torch.Tensor:
        """A given target tree (of the model's units) as the decoder writes it, EOS last."""
        return self.symbols.linearize(encode_tree(tree, self.symbols.dictionary))

    @property
    def stripped_ids(self) -> FrozenSet[int]:
        """The ids fairseq strips from the output: the brackets and label symbols."""
        return self.symbols.ids
