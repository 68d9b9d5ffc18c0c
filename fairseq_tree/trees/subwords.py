"""Subword splitting of tree leaves (Appendix 7.4 of Nguyen et al., ICLR 2020).

A word that BPE splits into k > 1 pieces becomes a node over those pieces, labelled with the
word's POS tag (``WORD`` where the tree has none); the pieces themselves carry no tag.
"""

from typing import Callable, List

from fairseq_tree.trees.normal_form import Node, NormalTree

WORD_LABEL = "WORD"
SUBWORD_NMT_SEPARATOR = "@@"
SENTENCEPIECE_SPACE = "\u2581"


def split_words(tree: NormalTree, segment: Callable[[str], List[str]]) -> NormalTree:
    """Apply ``segment`` (word -> subword pieces) to every leaf of ``tree``."""
    leaves, tags, word_nodes = [], [], []
    new_start = []  # new_start[i]: index of the first piece of old leaf i
    for word, tag in zip(tree.leaves, tree.tags):
        pieces = segment(word)
        if not pieces or any(not p or p != p.strip() or " " in p for p in pieces):
            raise ValueError(f"segmenting {word!r} gave invalid pieces {pieces!r}")
        new_start.append(len(leaves))
        if len(pieces) > 1:
            word_nodes.append(Node(tag or WORD_LABEL, len(leaves), len(leaves) + len(pieces)))
        leaves.extend(pieces)
        tags.extend([tag] if len(pieces) == 1 else [None] * len(pieces))
    new_start.append(len(leaves))
    nodes = [Node(n.label, new_start[n.start], new_start[n.end]) for n in tree.nodes]
    spans = {(n.start, n.end) for n in nodes}
    # A phrase over exactly this one word already names its pieces; spans must stay distinct.
    nodes += [n for n in word_nodes if (n.start, n.end) not in spans]
    nodes.sort(key=lambda n: (n.start, -n.end))
    return NormalTree(leaves, tags, nodes)


def join_subwords(pieces: List[str], method: str) -> List[str]:
    """Words from subword pieces: ``subword-nmt`` ("@@" marks a continued word) or
    ``sentencepiece`` ("\u2581" marks a word start)."""
    if method == "subword-nmt":
        text = " ".join(pieces).replace(SUBWORD_NMT_SEPARATOR + " ", "")
        return text.split()
    if method == "sentencepiece":
        return "".join(pieces).replace(SENTENCEPIECE_SPACE, " ").split()
    raise ValueError(f"unknown subword method {method!r}")
