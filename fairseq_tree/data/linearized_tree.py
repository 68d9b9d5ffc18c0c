"""The source of the linearized-tree baseline: the bracketed tree as one token sequence.

A sequence model reads the tree as tokens, as in Li et al. (2017, "Modeling Source Syntax for
Neural Machine Translation") and Aharoni & Goldberg (2017, "Towards String-to-Tree Neural
Machine Translation"). Each node becomes an opening bracket, its label symbol, what it covers,
and a closing bracket, built at load time from the stored leaves, labels and spans (no second
binarization)::

    (S (NP the dog) (VP barked))  ->  [(] [S] [(] [NP] the dog [)] barked [)] </s>

``(VP barked)`` is a POS-like preterminal, which the normal form drops (see
``fairseq_tree.trees.normal_form``): the sequence holds exactly the leaves and nodes that
tree2seq reads. A leaf may itself be the word ``(`` (the normal form unescapes ``-LRB-``), so the
brackets are symbols of their own, spelled like the label symbols (``label_symbol``): square
brackets, which no Moses token has (Moses splits them off), around a round bracket, which no node
label holds.
"""

import functools
from typing import Dict, FrozenSet, List, Tuple

import numpy as np
import torch
from fairseq.data import Dictionary, FairseqDataset

from fairseq_tree.data.label_dictionary import is_label_symbol, label_symbol
from fairseq_tree.data.tree_encoding import EncodedTree

OPEN_SYMBOL, CLOSE_SYMBOL = label_symbol("("), label_symbol(")")
TOKENS_PER_NODE = 3  # open bracket, label, close bracket


def add_bracket_symbols(dictionary: Dictionary) -> Tuple[int, int]:
    """Append the two bracket symbols to ``dictionary`` (after every symbol it was loaded with,
    so their ids depend on the dictionary file only); return their ids. A dictionary that
    already holds one of them as a word is refused: the brackets would not be told apart."""
    for symbol in (OPEN_SYMBOL, CLOSE_SYMBOL):
        if symbol in dictionary.indices:
            raise ValueError(
                f"the dictionary already holds {symbol!r} as a word, so it cannot also be a "
                "bracket of a linearized tree"
            )
    return dictionary.add_symbol(OPEN_SYMBOL), dictionary.add_symbol(CLOSE_SYMBOL)


def linearize(leaves: torch.Tensor, labels: torch.Tensor, spans: torch.Tensor,
              open_id: int, close_id: int) -> torch.Tensor:
    """One source tree as a token sequence.

    Args:
        leaves: (n + 1,) leaf ids, EOS last; labels: (m,) node label ids;
        spans: (m, 2) ``[start, end)`` leaf spans of properly nested nodes.
    Returns:
        (n + 1 + 3m,) ids: every node as ``open label ... close`` around its leaves and inner
        nodes (outer nodes first), EOS last.
    """
    leaf_ids, label_ids, span_list = leaves.tolist(), labels.tolist(), spans.tolist()
    order = sorted(range(len(label_ids)), key=lambda k: (span_list[k][0], -span_list[k][1]))
    out: List[int] = []
    open_ends: List[int] = []
    k = 0
    for j, leaf in enumerate(leaf_ids[:-1]):
        while k < len(order) and span_list[order[k]][0] == j:
            out += [open_id, label_ids[order[k]]]
            open_ends.append(span_list[order[k]][1])
            k += 1
        out.append(leaf)
        while open_ends and open_ends[-1] == j + 1:
            out.append(close_id)
            open_ends.pop()
    if k < len(order) or open_ends:
        raise ValueError(f"node spans {span_list} are not nested spans of {len(leaf_ids) - 1} "
                         "leaves")
    out.append(leaf_ids[-1])
    return torch.tensor(out, dtype=torch.long)


def delinearize(tokens: torch.Tensor, open_id: int,
                close_id: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The inverse of ``linearize``: (leaves, labels, spans), nodes in pre-order. Raises
    ValueError on unbalanced brackets or a bracket without its label."""
    ids = tokens.tolist()
    leaves: List[int] = []
    labels: List[int] = []
    spans: List[List[int]] = []
    stack: List[int] = []  # indices into spans of the open nodes
    i = 0
    while i < len(ids):
        if ids[i] == open_id:
            if i + 1 >= len(ids) or ids[i + 1] in (open_id, close_id):
                raise ValueError(f"position {i}: an opening bracket without its label")
            stack.append(len(spans))
            labels.append(ids[i + 1])
            spans.append([len(leaves), -1])
            i += 2
            continue
        if ids[i] == close_id:
            if not stack:
                raise ValueError(f"position {i}: a closing bracket without its opening one")
            spans[stack.pop()][1] = len(leaves)
        else:
            leaves.append(ids[i])
        i += 1
    if stack:
        raise ValueError(f"{len(stack)} brackets left open")
    return (torch.tensor(leaves, dtype=torch.long), torch.tensor(labels, dtype=torch.long),
            torch.tensor(spans, dtype=torch.long).view(-1, 2))


class LinearizedTreeDataset(FairseqDataset):
    """The linearized trees of aligned leaves / labels / spans datasets (those of
    ``fairseq-tree-preprocess``); ``sizes`` are the linearized lengths, n + 1 + 3m."""

    def __init__(self, leaves, labels, spans, open_id: int, close_id: int):
        if not len(leaves) == len(labels) == len(spans):
            raise ValueError(f"tree datasets disagree in length: {len(leaves)} sources, "
                             f"{len(labels)} label items, {len(spans)} span items")
        self.leaves, self.labels, self.spans = leaves, labels, spans
        self.open_id, self.close_id = open_id, close_id
        self.sizes = (np.asarray(leaves.sizes, dtype=np.int64)
                      + TOKENS_PER_NODE * np.asarray(labels.sizes, dtype=np.int64))

    def __getitem__(self, index: int) -> torch.Tensor:
        return linearize(self.leaves[index], self.labels[index],
                         self.spans[index].view(-1, 2), self.open_id, self.close_id)

    def __len__(self) -> int:
        return len(self.sizes)

    def num_tokens(self, index: int) -> int:
        return int(self.sizes[index])

    def size(self, index: int) -> int:
        return int(self.sizes[index])


class TreeSymbols:
    """What a linearized tree adds to its leaves in one dictionary: the two brackets (appended
    by ``add_tree_symbols``) and the label symbols the dictionary holds."""

    def __init__(self, dictionary: Dictionary, open_id: int, close_id: int):
        self.dictionary = dictionary
        self.bracket_ids = (open_id, close_id)

    def linearize(self, tree: EncodedTree) -> torch.Tensor:
        return linearize(tree.leaves, tree.labels, tree.spans, *self.bracket_ids)

    def delinearize(self, tokens: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return delinearize(tokens, *self.bracket_ids)

    def dataset(self, leaves, labels, spans) -> LinearizedTreeDataset:
        return LinearizedTreeDataset(leaves, labels, spans, *self.bracket_ids)

    @functools.cached_property
    def ids(self) -> FrozenSet[int]:
        """The ids of the brackets and of every label symbol: what leaves the leaves when
        dropped from a linearized tree."""
        return frozenset((*self.bracket_ids, *(i for i, symbol in enumerate(self.dictionary.symbols)
                                               if is_label_symbol(symbol))))


def add_tree_symbols(*dictionaries: Dictionary) -> List[TreeSymbols]:
    """Append the brackets to each of ``dictionaries`` (``add_bracket_symbols``), once to a
    dictionary given twice (a joined one); their ``TreeSymbols``, in the order given."""
    added: Dict[int, TreeSymbols] = {}
    for dictionary in dictionaries:
        if id(dictionary) not in added:
            added[id(dictionary)] = TreeSymbols(dictionary, *add_bracket_symbols(dictionary))
    return [added[id(dictionary)] for dictionary in dictionaries]
