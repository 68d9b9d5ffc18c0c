"""The normal form of a source tree (Section 4.1 and Appendix 7.4 of Nguyen et al., ICLR 2020).

The tree model reads leaves (the tokens, in order) and nonterminal nodes, each a label and the
``[start, end)`` span of leaves below it. The normal form is built as follows:

* a node whose children are exactly one bare token is a POS preterminal: it is dropped and its
  label becomes that leaf's tag. The rule is structural, so link-grammar's one-word phrase
  ``(NP John)`` becomes the leaf ``John`` tagged ``NP``, exactly as ``(NNP John)`` becomes
  ``John`` tagged ``NNP``; a leaf that is a bare token beside others (``(NP the dog.n)``) has no
  tag (``None``). The unlabelled one-word tree ``( word)`` gives an untagged leaf;
* a unary chain (several nodes over the same span) collapses to one node with the OUTERMOST label;
* every other nonterminal becomes a ``Node``; nodes are listed in pre-order, sorted by
  ``(start, -end)``, and their spans are distinct, non-empty and properly nested;
* the PTB escapes ``-LRB- -RRB- -LSB- -RSB- -LCB- -RCB-`` in leaves are unescaped to
  ``( ) [ ] { }``; tags and labels stay as written.

``to_bracketed`` writes a normal form back so that ``parse_tree`` reads the same normal form.
"""

import re
from dataclasses import dataclass

from fairseq_tree.trees.bracketed import WRAPPER_LABELS, Tree, parse_bracketed

_UNESCAPE = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}
# Only round brackets must be escaped to write a tree back; [ ] { } are ordinary characters.
_ESCAPE = {"(": "-LRB-", ")": "-RRB-"}
_ESCAPES = re.compile("|".join(map(re.escape, _UNESCAPE)))
_BAD_LABEL_CHARS = re.compile(r"[\s()]")


@dataclass(frozen=True)
class Node:
    """A nonterminal: its label and the ``[start, end)`` span of leaves below it."""

    label: str
    start: int
    end: int  # exclusive


@dataclass
class NormalTree:
    """Leaves with their POS tags, and nonterminal nodes in pre-order (see the module docstring)."""

    leaves: list[str]
    tags: list[str | None]  # POS tag of each leaf, None where the tree gives none
    nodes: list[Node]  # pre-order: sorted by (start, -end)

    def validate(self):
        """Raise ValueError unless spans are non-empty, in range, distinct, nested and ordered."""
        if len(self.tags) != len(self.leaves):
            raise ValueError(f"{len(self.leaves)} leaves but {len(self.tags)} tags")
        spans = [(node.start, node.end) for node in self.nodes]
        if spans != sorted(spans, key=lambda span: (span[0], -span[1])):
            raise ValueError("nodes must be in pre-order: sorted by (start, -end)")
        if len(set(spans)) != len(spans):
            raise ValueError("node spans must be distinct")
        open_ends: list[int] = []
        for start, end in spans:
            if not 0 <= start < end <= len(self.leaves):
                raise ValueError(f"span [{start}, {end}) is empty or out of range")
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            if open_ends and end > open_ends[-1]:
                raise ValueError(f"span [{start}, {end}) crosses an enclosing span")
            open_ends.append(end)


def unescape_token(token: str) -> str:
    """``-LRB-`` -> ``(`` and the other PTB bracket escapes, in one left-to-right pass."""
    return _ESCAPES.sub(lambda match: _UNESCAPE[match.group()], token)


def escape_token(token: str) -> str:
    """Escape the round brackets that would otherwise be read as tree structure."""
    for raw, escaped in _ESCAPE.items():
        token = token.replace(raw, escaped)
    return token


def _is_preterminal(tree: Tree) -> bool:
    return len(tree.children) == 1 and isinstance(tree.children[0], str)


def _collect(tree: Tree, leaves: list[str], tags: list[str | None]) -> list[list]:
    """Fill ``leaves`` and ``tags``; return ``[label, start, end]`` of every nonterminal in
    pre-order (outer before inner). Iterative, so deep trees are fine."""
    records: list[list] = []
    stack: list = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, list):  # the record of a node whose children are all done
            item[2] = len(leaves)
        elif isinstance(item, str):
            leaves.append(unescape_token(item))
            tags.append(None)
        elif _is_preterminal(item):
            leaves.append(unescape_token(item.children[0]))
            tags.append(item.label or None)  # "( word)": a one-word tree without any label
        else:
            record = [item.label, len(leaves), None]
            records.append(record)
            stack.append(record)
            stack.extend(reversed(item.children))
    return records


def normalize(tree: Tree) -> NormalTree:
    """Normal form of a parsed tree (see the module docstring)."""
    leaves: list[str] = []
    tags: list[str | None] = []
    nodes, seen = [], set()
    # Nodes over the same span always form a unary chain, whose outermost node comes first.
    for label, start, end in _collect(tree, leaves, tags):
        if (start, end) not in seen:
            seen.add((start, end))
            nodes.append(Node(label, start, end))
    nodes.sort(key=lambda node: (node.start, -node.end))
    return NormalTree(leaves, tags, nodes)


def parse_tree(text: str) -> NormalTree:
    """Parse one line (one or more bracketed trees) into its normal form."""
    return normalize(parse_bracketed(text))


def _check_symbols(tree: NormalTree):
    """Every leaf, tag and label must survive being written and read back."""
    for leaf in tree.leaves:
        if not leaf or any(char.isspace() for char in leaf) or _ESCAPES.search(leaf):
            raise ValueError(f"leaf {leaf!r} is empty, holds whitespace or a PTB escape")
    labels = [node.label for node in tree.nodes] + [tag for tag in tree.tags if tag is not None]
    for label in labels:
        if not label or _BAD_LABEL_CHARS.search(label):
            raise ValueError(f"label {label!r} is empty or holds whitespace or brackets")


def _check_writable(tree: NormalTree):
    """Raise ValueError for trees that no bracketed line reads back as (see ``to_bracketed``)."""
    n = len(tree.leaves)
    if not tree.nodes:
        if n != 1:
            raise ValueError(f"a tree without nodes must have one leaf, not {n}")
        return
    root = tree.nodes[0]
    if (root.start, root.end) != (0, n):
        raise ValueError("the first node must span all leaves")
    if n == 1 and root.label in WRAPPER_LABELS:
        raise ValueError(f"a root {root.label} over one word would be read as a wrapper")
    for node in tree.nodes:
        if node.end - node.start == 1 and tree.tags[node.start] is None:
            raise ValueError(
                f"node {node.label} over the untagged leaf {tree.leaves[node.start]!r} "
                "would read back as a preterminal"
            )


def _leaf_text(tree: NormalTree, j: int) -> str:
    """Leaf ``j`` as written: a preterminal ``(TAG tok)`` or a bare token."""
    leaf = escape_token(tree.leaves[j])
    if not tree.nodes and tree.tags[j] is None:
        return f"( {leaf})"  # a lone bare token is not a tree; "( tok)" reads back untagged
    return f"({tree.tags[j]} {leaf})" if tree.tags[j] is not None else leaf


def to_bracketed(tree: NormalTree) -> str:
    """Write a normal-form tree as one bracketed line; ``parse_tree`` reads it back unchanged.

    Tagged leaves are written as preterminals ``(TAG tok)``, untagged leaves bare, ``(`` and
    ``)`` in leaves as ``-LRB-`` and ``-RRB-``. Raises ValueError for a tree that is invalid or
    that no line reads back as: nodes not under one root, a one-leaf node over an untagged leaf
    (it would read as a preterminal), a one-leaf root labelled ROOT or TOP (a wrapper), or a leaf
    or label that cannot be written (whitespace, brackets in labels, a PTB escape in a leaf).
    """
    tree.validate()
    _check_symbols(tree)
    _check_writable(tree)
    parts: list[str] = []
    open_ends: list[int] = []
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
