"""Offline constituency trees from link-grammar (Debian's ``python3-link-grammar``).

link-grammar tokenizes the text itself and decorates the words of its constituent trees: a
dictionary subscript (``ran.v-d``), a guess mark (``Jechoniah{!<CAPITALIZED-WORDS>}``), braces
around a word left unlinked (``{ran}``, with ``max_null_count > 0``), ``{`` ``}`` for ``(``
``)``, a lower-cased first word, and the walls. Its leaves are matched back to the input tokens:

* a leaf matching one token (up to those decorations) becomes that token;
* a leaf spelling several tokens becomes those tokens, side by side: Moses' ``don 't`` is sent
  to link-grammar as ``don't`` (its dictionary knows ``don't`` and ``do n't``, not ``'t``);
* several leaves spelling one token (link-grammar split it) become that one token when they are
  siblings; in different phrases the sentence falls back to a flat tree.
"""

import contextlib
import ctypes
import functools
import math
import os
import re
import sys

from fairseq_tree.parsing.base import Failure, Parser, ParserUnavailable, leaf_slots, one_by_one
from fairseq_tree.trees.bracketed import Tree, TreeSyntaxError, format_bracketed, parse_bracketed
from fairseq_tree.trees.normal_form import escape_token

DEBIAN_DIST_PACKAGES = "/usr/lib/python3/dist-packages"
WALLS = ("LEFT-WALL", "RIGHT-WALL")
# link-grammar writes "(" and ")" as "{" and "}" in constituent trees, where brackets are syntax.
LG_BRACKETS = {"(": "{", ")": "}"}
# What link-grammar appends to a word in a tree: an optional guess mark ({!<CLASS>}, {!}, {?},
# {~}) and an optional dictionary subscript (.v-d, .n-u, .j, .#us).
LG_DECORATION = r"(\{[^{}\s]*\})?(\.[^\s(){}.]+)?"
# Tokens glued to the previous one before link-grammar reads the text (Moses splits "don't" as
# "don 't"; link-grammar has no word "'t").
GLUED = frozenset({"'t", "'T"})
MAX_JOINED = 4  # most tokens one link-grammar word may spell
NO_MATCH = "leaves do not match the tokens"


def import_linkgrammar():
    """The linkgrammar module; Debian installs it only for /usr/bin/python3, so look there too."""
    try:
        import linkgrammar
    except ImportError:
        sys.path.append(DEBIAN_DIST_PACKAGES)
        try:
            import linkgrammar
        except ImportError as error:
            raise ParserUnavailable(
                "link-grammar is not installed: `apt-get install python3-link-grammar` "
                f"(Debian 12; its module in {DEBIAN_DIST_PACKAGES} is found from a Python 3.11 "
                f"virtual environment too) ({error})"
            ) from None
        finally:
            sys.path.remove(DEBIAN_DIST_PACKAGES)  # nothing else should come from there
    return linkgrammar


@contextlib.contextmanager
def stdout_to_stderr():
    """Send what C code prints to stdout meanwhile to stderr: loading a dictionary prints a
    "Debug: ... Locale ... unknown" line, which must not end up among the trees on stdout."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        ctypes.CDLL(None).fflush(None)  # C's own stdout buffer, before fd 1 is restored
        os.dup2(saved, 1)
        os.close(saved)


def link_grammar_text(tokens: list[str]) -> str:
    """The sentence as given to link-grammar: the tokens, space-separated, ``'t`` glued on."""
    words: list[str] = []
    for token in tokens:
        if token in GLUED and words:
            words[-1] += token
        else:
            words.append(token)
    return " ".join(words)


@functools.lru_cache(maxsize=65536)
def _leaf_pattern(token: str) -> re.Pattern:
    """The leaves link-grammar prints for ``token``: decorated, maybe with its first letter
    lower-cased (as it does to a sentence's first word, also after a quote or colon), maybe in
    braces (a word left unlinked)."""
    word = LG_BRACKETS.get(token, token)
    words = dict.fromkeys((re.escape(word), re.escape(word[:1].lower() + word[1:])))
    core = "({}){}".format("|".join(words), LG_DECORATION)
    return re.compile(rf"{core}|\{{{core}\}}")


def leaf_matches(leaf: str, token: str) -> bool:
    """Whether link-grammar printed this leaf for the token."""
    return _leaf_pattern(token).fullmatch(leaf) is not None


def _joined(leaf: str, tokens: list[str], j: int) -> int:
    """How many tokens from ``j`` on the leaf spells (2 or more), or 0."""
    for k in range(2, MAX_JOINED + 1):
        if j + k <= len(tokens) and leaf_matches(leaf, "".join(tokens[j:j + k])):
            return k
    return 0


def _pieces(leaves: list[str], i: int, token: str) -> int:
    """How many leaves from ``i`` on spell the token (2 or more), or 0; each takes the longest
    prefix of what is left that it matches."""
    rest, n = token, 0
    while rest:
        if i + n == len(leaves):
            return 0
        size = next((k for k in range(len(rest), 0, -1)
                     if leaf_matches(leaves[i + n], rest[:k])), 0)
        if not size:
            return 0
        rest, n = rest[size:], n + 1
    return n if n > 1 else 0


def align(leaves: list[str], tokens: list[str]) -> list[list[str]] | None:
    """For each leaf, the tokens that replace it: one token; several (the leaf spells them); or
    none, for the second and later leaves of a token link-grammar split (the first leaf gets the
    token). None if leaves and tokens do not match."""
    out: list[list[str]] = []
    i = j = 0
    while i < len(leaves) and j < len(tokens):
        if leaf_matches(leaves[i], tokens[j]):
            out.append([tokens[j]])
            i, j = i + 1, j + 1
        elif k := _joined(leaves[i], tokens, j):
            out.append(tokens[j:j + k])
            i, j = i + 1, j + k
        elif n := _pieces(leaves, i, tokens[j]):
            out += [[tokens[j]]] + [[] for _ in range(n - 1)]
            i, j = i + n, j + 1
        else:
            return None
    return out if (i, j) == (len(leaves), len(tokens)) else None


def without_walls(node: Tree) -> Tree | None:
    """The tree without LEFT-WALL/RIGHT-WALL leaves, nor phrases left empty; None if empty."""
    children = []
    for child in node.children:
        if isinstance(child, Tree):
            child = without_walls(child)
        elif child.split(".")[0] in WALLS:
            child = None
        if child is not None:
            children.append(child)
    return Tree(node.label, children) if children else None


def tree_for_tokens(raw: str, tokens: list[str]) -> str | Failure:
    """The raw link-grammar tree with the tokens (PTB-escaped) as its leaves."""
    try:
        tree = without_walls(parse_bracketed(raw))
    except TreeSyntaxError:
        return Failure("malformed link-grammar tree")
    slots = list(leaf_slots(tree)) if tree else []
    replacements = align([node.children[i] for node, i in slots], tokens) if slots else None
    if replacements is None:
        return Failure(NO_MATCH)
    new = {}  # (id(node), index) -> escaped tokens replacing that leaf
    for k, ((node, index), words) in enumerate(zip(slots, replacements)):
        if not words and slots[k - 1][0] is not node:
            return Failure("token split across phrases")
        new[id(node), index] = [escape_token(word) for word in words]
    for node in {id(node): node for node, _ in slots}.values():
        node.children = [x for i, c in enumerate(node.children)
                         for x in new.get((id(node), i), [c])]
    return format_bracketed(tree)


class LinkGrammarParser(Parser):
    """link-grammar's parser, taking the best linkage found within the time limit."""

    name = "link-grammar"

    def __init__(self, lang: str = "en", timeout: float = 10, linkage_limit: int = 1000,
                 max_null_count: int = 0):
        self.lg = import_linkgrammar()
        try:
            with stdout_to_stderr():
                self.dictionary = self.lg.Dictionary(lang)
        except self.lg.LG_Error as err:
            raise ParserUnavailable(f"link-grammar has no dictionary for {lang!r}: {err}") from None
        # max_null_count=0: only complete linkages, which link every word. display_morphology
        # stays at its default (True), as the library prints trees.
        self.options = self.lg.ParseOptions(
            verbosity=0, max_null_count=max_null_count, max_parse_time=math.ceil(timeout),
            linkage_limit=linkage_limit,
        )

    def raw_tree(self, tokens: list[str]) -> str | Failure:
        """The best linkage's constituent tree exactly as link-grammar prints it, on one line."""
        sentence = self.lg.Sentence(link_grammar_text(tokens), self.dictionary, self.options)
        try:
            linkages = sentence.parse()
        except self.lg.LG_TimerExhausted:
            return Failure("time limit")
        for linkage in linkages:  # sorted by cost: the first is link-grammar's best
            return linkage.constituent_tree(3).strip()  # mode 3: one line, "(S (NP ...))"
        return Failure("no complete linkage")

    def tree(self, tokens: list[str]) -> str | Failure:
        """The tree with the tokens as leaves, or why there is none."""
        raw = self.raw_tree(tokens)
        return raw if isinstance(raw, Failure) else tree_for_tokens(raw, tokens)

    def _parse_tokens(self, batch):
        return one_by_one(batch, self.tree, (self.lg.LG_Error,), "link-grammar error")
