"""Trees from link probabilities: Algorithm 1 of Wang et al., "Tree Transformer: Integrating Tree
Structures into Self-Attention" (EMNLP 2019), unsupervised parsing with multiple layers.

``links[l][i]`` is a^l_i, the probability that words i and i+1 are in one constituent at layer l
(never smaller than at layer l-1). Parsing starts at the top layer and splits a span at its
weakest link; each half goes on one layer down, never below the minimum layer m. A weakest link
above the threshold is no breakpoint: the span goes one layer down unchanged, and at layer m it
becomes one flat constituent (so induced trees are not always binary). Spans of one or two words
are not split further.

The authors' code differs in one detail (not followed here): a half whose own weakest link is
0.7 or less stays at the same layer instead of going down.
"""

from collections.abc import Sequence

from fairseq_tree.trees.bracketed import Tree, format_bracketed
from fairseq_tree.trees.normal_form import escape_token

INDUCED_LABEL = "X"
THRESHOLD = 0.8  # "we set it to be 0.8 for all experiments" (Section 6)

# A word index, or a constituent: its children in order.
Structure = int | list


def build_tree(links: Sequence[Sequence[float]], layer: int, start: int, end: int,
               min_layer: int, threshold: float = THRESHOLD) -> Structure:
    """Algorithm 1, BUILDTREE(l, s, e): the tree over words ``start``..``end`` (inclusive),
    reading links ``start``..``end - 1`` of ``layer`` (and the layers below, down to
    ``min_layer``). The first weakest link wins a tie."""
    if end - start < 2:
        return start if start == end else [start, end]
    span = links[layer][start:end]
    breakpoint = start + min(range(len(span)), key=span.__getitem__)
    below = max(layer - 1, min_layer)
    if links[layer][breakpoint] > threshold:
        if layer == min_layer:
            return list(range(start, end + 1))
        return build_tree(links, below, start, end, min_layer, threshold)
    return [build_tree(links, below, start, breakpoint, min_layer, threshold),
            build_tree(links, below, breakpoint + 1, end, min_layer, threshold)]


def induce(links: Sequence[Sequence[float]], words: int, min_layer: int,
           threshold: float = THRESHOLD) -> Structure:
    """The tree of a sentence of ``words`` words from its L x (words - 1) links, starting at the
    top layer L - 1."""
    if words < 1:
        raise ValueError("a tree needs at least one word")
    if any(len(layer) != words - 1 for layer in links):
        raise ValueError(f"{words} words need {words - 1} links per layer")
    if not 0 <= min_layer < len(links):
        raise ValueError(f"minimum layer {min_layer} is not one of the {len(links)} layers")
    return build_tree(links, len(links) - 1, 0, words - 1, min_layer, threshold)


def to_tree(structure: Structure, tokens: Sequence[str], label: str = INDUCED_LABEL) -> Tree:
    """The structure as a ``Tree`` whose leaves are ``tokens`` (PTB-escaped) and whose every
    node is labelled ``label``; a one-word sentence is ``(X word)``."""
    if isinstance(structure, int):
        return Tree(label, [escape_token(tokens[structure])])
    return Tree(label, [escape_token(tokens[child]) if isinstance(child, int)
                        else to_tree(child, tokens, label) for child in structure])


def induced_tree(links: Sequence[Sequence[float]], tokens: Sequence[str], min_layer: int,
                 threshold: float = THRESHOLD) -> str:
    """Algorithm 1's tree of ``tokens`` written as one bracketed line."""
    return format_bracketed(to_tree(induce(links, len(tokens), min_layer, threshold), tokens))
