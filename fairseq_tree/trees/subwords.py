"""Subword splitting of tree leaves (Appendix 7.4 of Nguyen et al., ICLR 2020).

A word that BPE splits into k > 1 pieces becomes a node over those pieces, labelled with the
word's POS tag (``WORD`` where the tree has none); the pieces themselves carry no tag. If a
phrase already spans exactly that word (``(NP (NNP Johnson))`` is a node NP over the leaf
``Johnson`` tagged NNP), no second node is added: spans stay distinct, and the phrase label is
kept.
"""

from collections.abc import Callable

from fairseq_tree.trees.normal_form import Node, NormalTree

WORD_LABEL = "WORD"
SUBWORD_NMT_SEPARATOR = "@@"
SENTENCEPIECE_SPACE = "\u2581"


def split_words(tree: NormalTree, segment: Callable[[str], list[str]]) -> NormalTree:
    """Apply ``segment`` (word -> subword pieces) to every leaf of ``tree``.

    Node spans are remapped to piece indices; the result is in pre-order. Raises ValueError if
    ``segment`` returns no pieces, or a piece that is empty or holds whitespace.
    """
    leaves, tags, word_nodes = [], [], []
    new_start = []  # new_start[i]: index of the first piece of old leaf i
    for word, tag in zip(tree.leaves, tree.tags):
        pieces = segment(word)
        if not pieces or any(not p or any(c.isspace() for c in p) for p in pieces):
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


def join_subwords(pieces: list[str], method: str) -> list[str]:
    """Words from subword pieces: ``subword-nmt`` ("@@" ends a piece continued by the next) or
    ``sentencepiece`` ("\u2581" starts a word). The inverse of segmenting each word on its own."""
    if method == "subword-nmt":
        text = " ".join(pieces).replace(SUBWORD_NMT_SEPARATOR + " ", "")
        return text.split()
    if method == "sentencepiece":
        return "".join(pieces).replace(SENTENCEPIECE_SPACE, " ").split()
    raise ValueError(f"unknown subword method {method!r}")


def word_pieces(pieces: list[str]) -> list[list[str]]:
    """subword-nmt pieces grouped by word ("@@" ends a piece that the next one continues)."""
    words, current = [], []
    for piece in pieces:
        current.append(piece)
        if not piece.endswith(SUBWORD_NMT_SEPARATOR):
            words.append(current)
            current = []
    if current:
        raise ValueError(f"the last piece {current[-1]!r} continues a word that never ends")
    return words


def first_pieces(words: list[str], segment: Callable[[list[str]], list[str]]) -> list[str]:
    """One unit per word: each word's first subword piece, as written by ``segment`` (words ->
    pieces; subword-nmt's "@@" stays on a piece that a word continues). The Tree Transformer's
    code feeds its model this way (Wang et al., 2019: a word is its first WordPiece), so that its
    links join words, not pieces."""
    units = []
    for word in words:
        pieces = segment([word])
        if not pieces:
            raise ValueError(f"segmenting {word!r} gave no pieces")
        units.append(pieces[0])
    return units
