"""Dependency heads from CoNLL-U, aligned to the leaves of the binarized trees.

The dependency variant of Ahmed et al. (2019) composes each word from itself and its dependents,
so it needs the head of every leaf. A CoNLL-U file (https://universaldependencies.org/format.html)
gives them: one sentence per line of the source tree file, in order, its word tokens (multiword
ranges ``3-4`` and empty nodes ``5.1`` are skipped) spelling exactly the tree's leaves (PTB
bracket escapes such as ``-LRB-`` are read as the trees read them). The heads are stored per leaf,
0-based, -1 at the root (``{prefix}.heads``, int32, one item per tree, like the spans); the model
shifts them to leaf columns as it shifts spans. Subword-split trees (their leaves are pieces)
align with ``subword_conllu``'s sentences: each word's pieces hang under its last piece, which
takes the word's head.

Every problem is a one-line ``InputError`` naming the CoNLL-U file and line: a malformed token
line, a missing or invalid head, a sentence without exactly one root or with a cycle, a token
that differs from the tree's leaf, a sentence count that differs from the tree file's lines.
"""

import itertools
from dataclasses import dataclass, field
from typing import Iterable, Iterator, List, Optional, Sequence

import numpy as np
import torch
from fairseq.data.indexed_dataset import MMapIndexedDatasetBuilder

from fairseq_tree.data.binarize import SPAN_DTYPE, InputError
from fairseq_tree.data.tree_files import HEADS, tree_file
from fairseq_tree.trees.bracketed import lowercase_leaf
from fairseq_tree.trees.dependency import EMPTY_LINE_COMMENT
from fairseq_tree.trees.normal_form import unescape_token
from fairseq_tree.trees.subwords import join_subwords, word_pieces


@dataclass
class ConlluSentence:
    lineno: int  # line of the first token
    forms: List[str] = field(default_factory=list)
    heads: List[int] = field(default_factory=list)  # 0-based, -1 at the root
    token_lines: List[int] = field(default_factory=list)


def parse_token(line: str, path: str, lineno: int, expected_id: int) -> Optional[tuple]:
    """(form, head as written) of a word line, None for a multiword range or empty node."""
    fields = line.split("\t")
    if len(fields) != 10:
        raise InputError(path, lineno, f"expected 10 tab-separated fields, found {len(fields)}")
    token_id, form, head = fields[0], fields[1], fields[6]
    if "-" in token_id or "." in token_id:
        return None
    if token_id != str(expected_id):
        raise InputError(path, lineno, f"token ID {token_id!r} where {expected_id} was expected")
    if not head.isdigit():
        raise InputError(path, lineno, f"missing or invalid HEAD {head!r} (expected 0..n)")
    return form, int(head)


def check_tree(sentence: ConlluSentence, path: str):
    """Heads in range, one root, no cycle; 1-based heads become 0-based (-1 at the root)."""
    n = len(sentence.heads)
    for head, lineno in zip(sentence.heads, sentence.token_lines):
        if head > n:
            raise InputError(path, lineno, f"HEAD {head} is beyond the sentence's {n} tokens")
    roots = [line for head, line in zip(sentence.heads, sentence.token_lines) if head == 0]
    if len(roots) != 1:
        raise InputError(path, sentence.lineno, f"sentence has {len(roots)} roots (HEAD 0), not 1")
    sentence.heads = [head - 1 for head in sentence.heads]
    for word, lineno in enumerate(sentence.token_lines):
        seen, current = set(), word
        while current >= 0:
            if current in seen:
                raise InputError(path, lineno,
                                 "HEAD makes a cycle (the word is not under the root)")
            seen.add(current)
            current = sentence.heads[current]


def read_conllu(path: str) -> Iterator[ConlluSentence]:
    """The sentences of a CoNLL-U file, heads checked (see ``check_tree``). A block holding only
    the comment ``EMPTY_LINE_COMMENT`` is an empty sentence: the place of an empty input line
    (``fairseq-tree-parse --conllu`` writes one), so the sentences stay aligned with the lines."""
    with open(path, "rb") as handle:
        yield from conllu_sentences(handle, path)


def conllu_sentences(lines: Iterable[bytes], path: str) -> Iterator[ConlluSentence]:
    """``read_conllu`` of the lines of a CoNLL-U text (``path`` names it in errors)."""
    sentence = None
    for lineno, raw in enumerate(itertools.chain(lines, [b""]), start=1):
        try:
            line = raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError as err:
            raise InputError(path, lineno, f"not valid UTF-8 ({err.reason})") from None
        if not line.strip():
            if sentence is not None:
                if sentence.forms:
                    check_tree(sentence, path)
                yield sentence
            sentence = None
        elif line == EMPTY_LINE_COMMENT and sentence is None:
            sentence = ConlluSentence(lineno)
        elif not line.startswith("#"):
            sentence = sentence or ConlluSentence(lineno)
            token = parse_token(line, path, lineno, len(sentence.forms) + 1)
            if token is not None:
                sentence.forms.append(token[0])
                sentence.heads.append(token[1])
                sentence.token_lines.append(lineno)


def aligned_heads(sentence: ConlluSentence, leaves: Sequence[str], path: str, tree_where: str):
    """The sentence's heads, after checking that its tokens spell ``leaves``."""
    if len(sentence.forms) != len(leaves):
        raise InputError(path, sentence.lineno, f"sentence has {len(sentence.forms)} tokens but "
                         f"the tree at {tree_where} has {len(leaves)} leaves")
    for k, (form, leaf, lineno) in enumerate(zip(sentence.forms, leaves, sentence.token_lines)):
        if unescape_token(form) != leaf:
            raise InputError(path, lineno, f"token {k + 1} {form!r} differs from leaf {k + 1} "
                             f"{leaf!r} of the tree at {tree_where}")
    return sentence.heads


def parse_heads(conllu: str, leaves: Sequence[str], where: str) -> List[int]:
    """The heads of one sentence's CoNLL-U lines (a dependency parser's ``ParseResult.conllu``),
    checked and aligned to the tree's ``leaves`` as a file's are when binarized; errors name
    ``where``."""
    sentence = next(conllu_sentences(conllu.encode("utf-8").splitlines(), where), None)
    if sentence is None or not sentence.forms:
        raise InputError(where, None, "the dependency parse has no words")
    return aligned_heads(sentence, leaves, where, where)


def write_dependency_heads(conllu_path: str, trees: Iterator[tuple], prefix: str) -> int:
    """Write the heads dataset of the trees at ``prefix`` (``{prefix}.heads``): for each ``(tree
    lineno, leaves or None)`` of the tree file in order, the heads of the matching CoNLL-U
    sentence (read, and dropped where the tree line was skipped: leaves None). Returns the
    number of items written; raises ``InputError``."""
    path = tree_file(prefix, HEADS)
    builder = MMapIndexedDatasetBuilder(path + ".bin", dtype=SPAN_DTYPE)
    sentences, written = read_conllu(conllu_path), 0
    for tree_where, leaves in trees:
        sentence = next(sentences, None)
        if sentence is None:
            raise InputError(conllu_path, None, f"has no sentence for the tree at {tree_where} "
                             "(one sentence per tree line is expected)")
        if leaves is not None:
            heads = aligned_heads(sentence, leaves, conllu_path, tree_where)
            builder.add_item(torch.from_numpy(np.asarray(heads, dtype=SPAN_DTYPE)))
            written += 1
    extra = next(sentences, None)
    if extra is not None:
        raise InputError(conllu_path, extra.lineno, "has more sentences than the tree file lines")
    builder.finalize(path + ".idx")
    return written


SUBWORD_RELATION = "subword"  # a piece's relation to the last piece of its word


def lowercase_forms(block: str) -> str:
    """A CoNLL-U sentence with its words lowercased as the trees' leaves are
    (``lowercase_leaf``)."""
    lines = []
    for line in block.splitlines(keepends=True):
        columns = line.split("\t")
        if len(columns) > 1 and not line.startswith("#"):
            columns[1] = lowercase_leaf(columns[1])
        lines.append("\t".join(columns))
    return "".join(lines)


def subword_conllu(block: str, pieces: Sequence[str]) -> str:
    """One CoNLL-U sentence (lines ending with a line break, as ``fairseq-tree-parse --conllu``
    writes it) rewritten over the subword-nmt ``pieces`` of its words, the leaves of the tree
    that BPE made from its word-level tree: a word's last piece takes the word's head (the last
    piece of the head word) and its columns; the word's other pieces depend on that last piece
    (relation ``subword``). The last piece is the word's: English marks number at the end of
    the word ("editor@@ s"), and a dependency encoder composes a word where its head piece is.
    Raises ValueError when the pieces do not spell the sentence's words one by one."""
    rows = [line.split("\t") for line in block.splitlines()
            if line and not line.startswith("#")]
    words = [row for row in rows if "-" not in row[0] and "." not in row[0]]
    if not words:
        return block
    groups = word_pieces(pieces)
    if len(groups) != len(words):
        raise ValueError(f"{len(pieces)} pieces make {len(groups)} words, the sentence has "
                         f"{len(words)}")
    last, count = [], 0  # the 1-based ID of each word's last piece
    for group in groups:
        count += len(group)
        last.append(count)
    lines = []
    for row, group, own in zip(words, groups, last):
        if [unescape_token(row[1])] != join_subwords(group, "subword-nmt"):
            raise ValueError(f"pieces {' '.join(group)!r} do not spell the word {row[1]!r}")
        head = int(row[6])
        first = own - len(group) + 1
        for piece_id, piece in enumerate(group[:-1], start=first):
            lines.append([str(piece_id), piece, "_", "_", "_", "_", str(own), SUBWORD_RELATION,
                          "_", "_"])
        lines.append([str(own), group[-1], *row[2:6], str(last[head - 1] if head else 0),
                      *row[7:10]])
    return "".join("\t".join(fields) + "\n" for fields in lines)
