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

import functools
from typing import Callable, Dict, FrozenSet, Iterator, List, Optional

import numpy as np
import torch
from fairseq.data import data_utils

from fairseq_tree.data.label_dictionary import label_symbol, symbol_label
from fairseq_tree.data.linearized_tree import TOKENS_PER_NODE, TreeSymbols
from fairseq_tree.data.tree_encoding import encode_tree
from fairseq_tree.data.tree_files import LABELS, SPANS, tree_file
from fairseq_tree.data.tree_grammar import TreeGrammar
from fairseq_tree.trees.normal_form import NormalTree, escape_token, parse_tree

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

    @functools.cached_property
    def grammar(self) -> TreeGrammar:
        """What a written tree may hold next (``data.tree_grammar``), in the target dictionary."""
        open_id, close_id = self.symbols.bracket_ids
        dictionary = self.symbols.dictionary
        return TreeGrammar(len(dictionary), open_id, close_id,
                           self.symbols.ids - {open_id, close_id}, dictionary.eos())

    def bracketed(self, tokens: torch.Tensor,
                  merge_subwords: Callable[[str], str] = lambda text: text) -> str:
        """A written tree as a bracketed line, ``(S (NP le chien) (VN a aboyé))``: each
        opening bracket with its label as ``(LABEL``, each run of leaves joined back into words
        by ``merge_subwords`` (subword units -> words), ``(`` and ``)`` in words escaped as in
        the input trees; what follows the end of sentence is left out. Written as it was
        written: a malformed tree (under ``--no-well-formed-trees``) stays malformed, a
        stray label shows as its symbol, ``[NP]``."""
        dictionary = self.symbols.dictionary
        open_id, close_id = self.symbols.bracket_ids
        parts: List[str] = []
        leaves: List[str] = []

        def end_of_leaves():
            parts.extend(escape_token(word) for word in merge_subwords(" ".join(leaves)).split())
            leaves.clear()

        for token in tokens.tolist():
            if token == dictionary.eos():
                break
            if token not in self.symbols.ids:
                leaves.append(dictionary[token])
                continue
            end_of_leaves()
            if token == open_id or token == close_id:
                parts.append("(" if token == open_id else ")")
            elif parts and parts[-1] == "(":
                parts[-1] += symbol_label(dictionary[token])
            else:
                parts.append(dictionary[token])
        end_of_leaves()
        return " ".join(parts).replace(" )", ")")
