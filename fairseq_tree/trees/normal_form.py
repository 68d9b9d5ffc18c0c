"""The normal form of a source tree (Section 4.1 and Appendix 7.4 of Nguyen et al., ICLR 2020).

Leaves are the tokens in order; POS preterminals are dropped, their tag kept on the leaf; unary
chains collapse to one node; every other nonterminal is a ``Node``: a label and its
``[start, end)`` leaf span. A node whose only child is a single token is a preterminal: its label
is that token's tag. (Link-grammar's one-word phrase ``(NP John)`` therefore becomes the leaf
``John`` tagged ``NP``, exactly as ``(NNP John)`` becomes ``John`` tagged ``NNP``.)
"""

from dataclasses import dataclass
from typing import List, Optional

from fairseq_tree.trees.bracketed import Tree, TreeSyntaxError, parse_bracketed

# PTB escapes of brackets inside tokens. Only "(" and ")" must be escaped to write a tree back.
_UNESCAPE = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}
_ESCAPE = {"(": "-LRB-", ")": "-RRB-"}

__all__ = ["Node", "NormalTree", "TreeSyntaxError", "normalize", "parse_tree", "to_bracketed"]


@dataclass(frozen=True)
class Node:
    label: str
    start: int
    end: int  # exclusive


@dataclass
class NormalTree:
    leaves: List[str]
    tags: List[Optional[str]]  # POS tag of each leaf, None where the tree gives none
    nodes: List[Node]  # pre-order: sorted by (start, -end)

    def validate(self):
        """Raise ValueError unless spans are non-empty, in range, distinct, nested and ordered."""
        if len(self.tags) != len(self.leaves):
            raise ValueError("one tag (or None) per leaf is required")
        spans = [(n.start, n.end) for n in self.nodes]
        if spans != sorted(spans, key=lambda s: (s[0], -s[1])) or len(set(spans)) != len(spans):
            raise ValueError("node spans must be distinct and in pre-order (start, -end)")
        open_ends: List[int] = []
        for start, end in spans:
            if not 0 <= start < end <= len(self.leaves):
                raise ValueError(f"span [{start}, {end}) is empty or out of range")
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            if open_ends and end > open_ends[-1]:
                raise ValueError(f"span [{start}, {end}) crosses an enclosing span")
            open_ends.append(end)


def unescape_token(token: str) -> str:
    for escaped, raw in _UNESCAPE.items():
        token = token.replace(escaped, raw)
    return token


def escape_token(token: str) -> str:
    for raw, escaped in _ESCAPE.items():
        token = token.replace(raw, escaped)
    return token


def _is_preterminal(tree: Tree) -> bool:
    return len(tree.children) == 1 and isinstance(tree.children[0], str)


class _Close:
    """Stack marker: the node ``record`` ends at the current leaf count."""

    def __init__(self, record: list):
        self.record = record


def normalize(tree: Tree) -> NormalTree:
    """Normal form of a parsed tree (iterative, so deep trees are fine)."""
    leaves: List[str] = []
    tags: List[Optional[str]] = []
    records: List[list] = []  # [label, start, end] in pre-order
    stack: list = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, _Close):
            item.record[2] = len(leaves)
        elif isinstance(item, str):
            leaves.append(unescape_token(item))
            tags.append(None)
        elif _is_preterminal(item):
            leaves.append(unescape_token(item.children[0]))
            tags.append(item.label)
        else:
            record = [item.label, len(leaves), None]
            records.append(record)
            stack.append(_Close(record))
            stack.extend(reversed(item.children))
    nodes, seen = [], set()
    for label, start, end in records:
        if (start, end) not in seen:  # the outermost node of a unary chain comes first
            seen.add((start, end))
            nodes.append(Node(label, start, end))
    nodes.sort(key=lambda n: (n.start, -n.end))
    return NormalTree(leaves, tags, nodes)


def parse_tree(text: str) -> NormalTree:
    """Parse one line (one or more bracketed trees) into its normal form."""
    return normalize(parse_bracketed(text))


def _leaf_text(tree: NormalTree, j: int) -> str:
    leaf = escape_token(tree.leaves[j])
    return f"({tree.tags[j]} {leaf})" if tree.tags[j] is not None else leaf


def _check_writable(tree: NormalTree):
    n = len(tree.leaves)
    if not tree.nodes:
        if n != 1 or tree.tags[0] is None:
            raise ValueError("a tree without nodes must be a single tagged leaf")
        return
    if (tree.nodes[0].start, tree.nodes[0].end) != (0, n):
        raise ValueError("the first node must span all leaves")
    for node in tree.nodes:
        if node.end - node.start == 1 and tree.tags[node.start] is None:
            raise ValueError(
                f"node {node.label} over the untagged leaf {tree.leaves[node.start]!r} "
                "would read back as a preterminal"
            )


def to_bracketed(tree: NormalTree) -> str:
    """Write a normal-form tree as one bracketed line; ``parse_tree`` reads it back unchanged."""
    tree.validate()
    _check_writable(tree)
    parts: List[str] = []
    open_ends: List[int] = []
    k = 0
    for j in range(len(tree.leaves)):
        while k < len(tree.nodes) and tree.nodes[k].start == j:
            parts.append(f"({tree.nodes[k].label}")
            open_ends.append(tree.nodes[k].end)
            k += 1
        parts.append(_leaf_text(tree, j))
        while open_ends and open_ends[-1] == j + 1:
            parts[-1] += ")"
            open_ends.pop()
    return " ".join(parts)
