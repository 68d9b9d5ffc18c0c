"""Reading and writing bracketed constituency trees, one line at a time, as parsers print them.

Handles stanza / CoreNLP / benepar / PTB output (``(ROOT (S (NP (DT the) (NN dog)) ...))``,
``( (S ...))``) and link-grammar output, whose phrases hold bare tokens (``(NP the dog.n)``).
Tokens are kept verbatim here (``ran.v``, ``{word}``, ``-LRB-``); normalisation lives in
``normal_form``.

Reading rules:

* the outermost ``(ROOT x)``, ``(TOP x)`` or ``( x)`` around exactly one child ``x`` is a wrapper
  and is removed (repeatedly); ``(ROOT x y)`` keeps its node, and an unlabelled ``( x y)`` becomes
  a ``DOC`` node, so that no node label is empty. Around a single token the bracket stays: the
  normaliser reads ``(ROOT w)`` as the word ``w`` tagged ROOT and ``( w)`` as an untagged word;
* several trees on one line (a multi-sentence segment) are joined under one ``DOC`` node, so the
  line stays one example;
* a label is written right after its ``(``, as NLTK reads trees, so ``( x y)`` has no label;
  only wrappers may omit their label: ``(S ( a b))`` is an error.
"""

import re
from dataclasses import dataclass, field

DOCUMENT_LABEL = "DOC"
# Outermost labels that only wrap the real tree (stanza/CoreNLP ROOT, benepar/NLTK TOP, PTB "").
WRAPPER_LABELS = frozenset({"", "ROOT", "TOP"})

# "(" with the label written right after it (as NLTK reads trees: "( x)" has no label), ")", or
# a token.
_TOKEN = re.compile(r"\([^\s()]*|\)|[^\s()]+")


class TreeSyntaxError(ValueError):
    """A line that is not a bracketed tree; the message says why, without file or line."""


@dataclass
class Tree:
    """A bracketed tree as written: a label and its children, a ``str`` child being a token."""

    label: str
    children: list["Tree | str"] = field(default_factory=list)


def _strip_wrappers(tree: Tree) -> Tree:
    """Drop wrapper labels around a single child; a wrapper over several keeps its node."""
    while tree.label in WRAPPER_LABELS:
        if len(tree.children) > 1:
            return Tree(tree.label or DOCUMENT_LABEL, tree.children)
        if not isinstance(tree.children[0], Tree):
            break  # "(ROOT word)": a one-word tree, read by the normaliser as a tagged word
        tree = tree.children[0]
    return tree


def _check_labels(tree: Tree):
    """Below the (stripped) root every node needs a label: ``(S ( a b))`` is an error."""
    stack = [tree]
    while stack:
        for child in stack.pop().children:
            if isinstance(child, Tree):
                if not child.label:
                    raise TreeSyntaxError("'(' without a label inside a tree")
                stack.append(child)


def _close(node: Tree, open_nodes: list[Tree], trees: list[Tree]):
    """Attach a just-closed node to its parent, or to the line's list of trees."""
    if not node.children:
        raise TreeSyntaxError("empty brackets '()'" if not node.label
                              else f"node '({node.label} )' has no children")
    (open_nodes[-1].children if open_nodes else trees).append(node)


def _read_trees(tokens: list[str]) -> list[Tree]:
    """The top-level trees of a token stream; iterative, so depth is not limited by recursion."""
    trees: list[Tree] = []
    open_nodes: list[Tree] = []
    for token in tokens:
        if token.startswith("("):
            open_nodes.append(Tree(token[1:]))
        elif token == ")":
            if not open_nodes:
                raise TreeSyntaxError("unbalanced brackets: ')' without a matching '('")
            _close(open_nodes.pop(), open_nodes, trees)
        elif open_nodes:
            open_nodes[-1].children.append(token)
        else:
            raise TreeSyntaxError(f"text outside brackets: {token!r}")
    if open_nodes:
        raise TreeSyntaxError(f"unbalanced brackets: {len(open_nodes)} unclosed '('")
    return trees


def tree_leaves(tree: Tree) -> list[str]:
    """The tokens of a written tree, left to right."""
    tokens, stack = [], [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            tokens.append(node)
        else:
            stack.extend(reversed(node.children))
    return tokens


def parse_bracketed(text: str) -> Tree:
    """Parse one line holding one or more bracketed trees (see the module docstring).

    Raises ``TreeSyntaxError`` for an empty line, unbalanced brackets, a token outside any
    bracket, a node without children, or a missing label below the outermost bracket.
    """
    tokens = _TOKEN.findall(text)
    if not tokens:
        raise TreeSyntaxError("empty tree")
    trees = [_strip_wrappers(tree) for tree in _read_trees(tokens)]
    for tree in trees:
        _check_labels(tree)
    return trees[0] if len(trees) == 1 else Tree(DOCUMENT_LABEL, trees)


def format_bracketed(tree: Tree | str) -> str:
    """One-line bracketed form of ``tree`` (``parse_bracketed`` reads it back unchanged).

    Iterative, like the reader, so any tree that could be read can be written.
    """
    parts: list[str] = []
    stack: list[Tree | str | None] = [tree]  # None closes the most recently opened node
    while stack:
        item = stack.pop()
        if item is None:
            parts[-1] += ")"
        elif isinstance(item, str):
            parts.append(item)
        else:
            parts.append(f"({item.label}")
            stack.append(None)
            stack.extend(reversed(item.children))
    return " ".join(parts)


# A leaf of a bracketed tree: a token not right after "(" (that is a label).
_LEAF = re.compile(r"(?<![^\s)])[^\s()]+")
_ESCAPES = re.compile(r"(-LRB-|-RRB-|-LSB-|-RSB-|-LCB-|-RCB-)")


def lowercase_leaf(leaf: str) -> str:
    """A leaf lowercased as the recipes lowercase their trees (``lowercase: true`` in
    recipe.json): the PTB bracket escapes in it stay as they are."""
    parts = _ESCAPES.split(leaf)
    return "".join(part if i % 2 else part.lower() for i, part in enumerate(parts))


def lowercase_leaves(tree: str) -> str:
    """Lowercase the leaves of a bracketed tree (``lowercase_leaf``), not its labels."""
    return _LEAF.sub(lambda match: lowercase_leaf(match.group()), tree)
