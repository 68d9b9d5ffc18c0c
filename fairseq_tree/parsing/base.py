"""What every parsing backend shares: results, flat fallback trees, and the output check.

A backend turns token lists into bracketed trees whose leaves are exactly the tokens given. It
implements ``_parse_tokens`` for non-empty sentences, returning a tree line or a ``Failure``;
``Parser.parse`` checks every tree with ``fairseq_tree.trees`` and replaces failures (and any
tree whose leaves are not the tokens) by a flat tree, so no sentence is ever dropped.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from fairseq_tree.trees.bracketed import (
    Tree,
    TreeSyntaxError,
    format_bracketed,
    parse_bracketed,
)
from fairseq_tree.trees.normal_form import escape_token, parse_tree, unescape_token

FLAT_LABEL = "ROOT"
RIGHT_BRANCHING_LABEL = "X"


class ParserUnavailable(RuntimeError):
    """The backend cannot run here (models, server or library missing); the message, one line,
    says how to get it."""


@dataclass(frozen=True)
class Failure:
    """A sentence the backend could not parse, and why (a short reason used in the summary)."""

    reason: str


@dataclass(frozen=True)
class ParseResult:
    """One sentence's tree (one bracketed line) and, when it is a flat fallback, why.

    ``tree`` is ``""`` for an empty sentence; otherwise it is always a valid tree whose leaves
    are the tokens (PTB escapes for round brackets).
    """

    tree: str
    fallback: str | None = None  # None: the backend's own tree (or an empty sentence)
    conllu: str | None = None  # the dependency parse the tree was made from, if any


@dataclass(frozen=True)
class DependencyTree:
    """A backend's tree made from a dependency parse, with that parse as CoNLL-U lines (no blank
    line after them), for the dependency encoders (``fairseq-tree-parse --conllu``)."""

    tree: str
    conllu: str


def flat_tree(tokens: list[str]) -> str:
    """``(ROOT tok1 tok2 ...)``: no syntax. One token reads back as a word tagged ROOT (no node),
    several as one ROOT node over them."""
    return "({} {})".format(FLAT_LABEL, " ".join(escape_token(token) for token in tokens))


def is_flat_fallback(tree: str) -> bool:
    """Whether ``tree`` is a ``flat_tree``: a ROOT node over bare tokens. No backend writes
    such a tree for a sentence it parsed (stanza and CoreNLP put phrases under ROOT, link-grammar
    labels its root S, NP, ...), so this counts the sentences a parser could not parse."""
    try:
        root = parse_bracketed(tree)
    except TreeSyntaxError:
        return False
    return root.label == FLAT_LABEL and all(isinstance(c, str) for c in root.children)


def expected_leaves(tokens: list[str]) -> list[str]:
    """The leaves ``parse_tree`` reads for these tokens written with PTB escapes."""
    return [unescape_token(escape_token(token)) for token in tokens]


def tree_problem(tree: str, tokens: list[str]) -> str | None:
    """Why ``tree`` is not a usable tree of ``tokens`` (malformed, other leaves), or None."""
    try:
        leaves = parse_tree(tree).leaves
    except (TreeSyntaxError, ValueError) as err:
        return f"malformed tree ({err})"
    return None if leaves == expected_leaves(tokens) else "leaves differ from the tokens"


def leaf_slots(tree: Tree) -> Iterator[tuple[Tree, int]]:
    """``(node, child index)`` of every leaf, left to right (iterative: any depth)."""
    stack = [(tree, 0)]
    while stack:
        node, index = stack.pop()
        if index == len(node.children):
            continue
        stack.append((node, index + 1))
        child = node.children[index]
        if isinstance(child, str):
            yield node, index
        else:
            stack.append((child, 0))


def with_tokens(tree: Tree, tokens: list[str]) -> str | Failure:
    """The tree written with ``tokens`` as its leaves, in order, when it has one leaf per token.

    For parsers given pre-tokenized input (stanza, CoreNLP): their leaves are the tokens up to
    escaping and normalisation (``-LRB-``, quotes), so the tokens themselves are put back.
    """
    slots = list(leaf_slots(tree))
    if len(slots) != len(tokens):
        return Failure("leaf count differs from the tokens")
    for (node, index), token in zip(slots, tokens):
        node.children[index] = escape_token(token)
    return format_bracketed(tree)


class Parser:
    """Base of the backends: ``parse`` a batch of token lists into ``ParseResult``s, in order."""

    name = "parser"

    def _parse_tokens(self, batch: list[list[str]]) -> list[str | DependencyTree | Failure]:
        """Trees (or failures) of non-empty sentences; the backend's own work."""
        raise NotImplementedError

    def parse(self, batch: list[list[str]]) -> list[ParseResult]:
        """One result per sentence; empty sentences give ``ParseResult("")``."""
        sentences = [tokens for tokens in batch if tokens]
        trees = iter(self._parse_tokens(sentences) if sentences else [])
        return [self._checked(next(trees), tokens) if tokens else ParseResult("")
                for tokens in batch]

    def _checked(self, tree: str | DependencyTree | Failure, tokens: list[str]) -> ParseResult:
        """The tree if it is one of these tokens, else a flat tree with the reason (a dependency
        parse is kept either way: its tokens are the input's)."""
        conllu = None
        if isinstance(tree, DependencyTree):
            tree, conllu = tree.tree, tree.conllu
        reason = tree.reason if isinstance(tree, Failure) else tree_problem(tree, tokens)
        if reason is None:
            return ParseResult(tree, conllu=conllu)
        return ParseResult(flat_tree(tokens), reason, conllu)

    def close(self):
        """Release what the backend holds (a server, a pipeline); it is not used afterwards."""


class FlatParser(Parser):
    """Every sentence as a flat tree: for languages without a parser, and a no-syntax baseline."""

    name = "flat"

    def _parse_tokens(self, batch):
        return [flat_tree(tokens) for tokens in batch]


def right_branching_tree(tokens: list[str]) -> str:
    """``(X tok1 (X tok2 ... (X tokN-1 tokN)))``: a node over every suffix of two or more tokens,
    a tree with a shape and no syntax (McCoy et al.'s 2020 control for the gold tree). One token
    is a flat tree."""
    escaped = [escape_token(token) for token in tokens]
    if len(escaped) < 2:
        return flat_tree(tokens)
    tree = f"({RIGHT_BRANCHING_LABEL} {escaped[-2]} {escaped[-1]})"
    for token in reversed(escaped[:-2]):
        tree = f"({RIGHT_BRANCHING_LABEL} {token} {tree})"
    return tree


class RightBranchingParser(Parser):
    """Every sentence as a right-branching tree (``right_branching_tree``), any language."""

    name = "right-branching"

    def _parse_tokens(self, batch):
        return [right_branching_tree(tokens) for tokens in batch]


def one_by_one(batch: list[list[str]], parse_one: Callable[[list[str]], str | Failure],
               errors: tuple[type[BaseException], ...], reason: str) -> list[str | Failure]:
    """Parse sentence by sentence, a sentence raising one of ``errors`` becoming a failure; for
    retrying a batch that failed as a whole, so one bad sentence does not sink the others."""
    results: list[str | Failure] = []
    for tokens in batch:
        try:
            results.append(parse_one(tokens))
        except errors:
            results.append(Failure(reason))
    return results
