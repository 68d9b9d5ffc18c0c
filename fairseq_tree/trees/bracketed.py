"""Reading and writing bracketed constituency trees, one per line, as parsers print them.

Handles stanza / CoreNLP / benepar / PTB output (``(ROOT (S (NP (DT the) (NN dog)) ...))``,
``( (S ...))``) and link-grammar output, whose phrases hold bare tokens (``(NP the dog.n)``).
Tokens are kept verbatim here; normalisation lives in ``normal_form``.
"""

import re
from dataclasses import dataclass, field
from typing import List, Union

DOCUMENT_LABEL = "DOC"
# Outermost labels that only wrap the real tree (stanza/CoreNLP ROOT, benepar/NLTK TOP, PTB "").
WRAPPER_LABELS = frozenset({"", "ROOT", "TOP"})

_TOKEN = re.compile(r"\(|\)|[^\s()]+")


class TreeSyntaxError(ValueError):
    """A line that is not a bracketed tree; the message says why, without file or line."""


@dataclass
class Tree:
    label: str
    children: List[Union["Tree", str]] = field(default_factory=list)  # str children are tokens


def _strip_wrappers(tree: Tree) -> Tree:
    """Drop wrapper labels around a single tree; a wrapper around several trees is a document."""
    while tree.label in WRAPPER_LABELS:
        if len(tree.children) > 1:
            return Tree(DOCUMENT_LABEL, tree.children)
        if not isinstance(tree.children[0], Tree):
            break  # "(ROOT word)": a one-word tree tagged ROOT, left to the normaliser
        tree = tree.children[0]
    return tree


def parse_bracketed(text: str) -> Tree:
    """Parse one line holding one or more bracketed trees.

    Several trees on one line (a multi-sentence segment) are joined under one ``DOC`` node, so
    that the line stays one example. Wrappers (``ROOT``, ``TOP``, empty label) around one tree
    are removed; a wrapper around several trees becomes a ``DOC`` node, so no label is empty.
    Iterative, so deep trees cannot exhaust Python's recursion limit.
    """
    tokens = _TOKEN.findall(text)
    if not tokens:
        raise TreeSyntaxError("empty tree")
    trees: List[Tree] = []
    open_nodes: List[Tree] = []
    pos = 0
    while pos < len(tokens):
        token = tokens[pos]
        if token == "(":
            has_label = pos + 1 < len(tokens) and tokens[pos + 1] not in ("(", ")")
            open_nodes.append(Tree(tokens[pos + 1] if has_label else ""))
            pos += has_label
        elif token == ")":
            if not open_nodes:
                raise TreeSyntaxError("unbalanced brackets: ')' without a matching '('")
            node = open_nodes.pop()
            if not node.children:
                raise TreeSyntaxError(f"node '({node.label})' has no children")
            (open_nodes[-1].children if open_nodes else trees).append(node)
        elif open_nodes:
            open_nodes[-1].children.append(token)
        else:
            raise TreeSyntaxError(f"text outside brackets: {token!r}")
        pos += 1
    if open_nodes:
        raise TreeSyntaxError(f"unbalanced brackets: {len(open_nodes)} '(' never closed")
    trees = [_strip_wrappers(tree) for tree in trees]
    return trees[0] if len(trees) == 1 else Tree(DOCUMENT_LABEL, trees)


def format_bracketed(tree: Union[Tree, str]) -> str:
    """One-line bracketed form of ``tree`` (inverse of ``parse_bracketed`` for a single tree)."""
    if isinstance(tree, str):
        return tree
    inner = " ".join(format_bracketed(child) for child in tree.children)
    return f"({tree.label} {inner})" if tree.label else f"( {inner})"
