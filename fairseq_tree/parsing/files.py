"""A file of sentences parsed into a file of trees, one bracketed tree per line, resumably: the
work of ``fairseq-tree-parse`` (which says what the output holds), for the data recipes and
bench too.

Writing into an existing output resumes: its complete lines are kept and the input lines they
stand for are skipped; a CoNLL-U file written beside it (a dependency parser's parses) is resumed
with it.
"""

import collections
import os
import sys
from collections.abc import Iterator
from typing import Callable, Optional

from fairseq_tree.data.progress import Progress
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.line_files import STDIO, batched, decode_line, numbered_lines
from fairseq_tree.parsing import moses
from fairseq_tree.parsing.pool import parse_batches
from fairseq_tree.trees.dependency import EMPTY_LINE_COMMENT

CONLLU_END = b"\n\n"  # a CoNLL-U sentence ends with a blank line


def resume_point(path: str) -> int:
    """Complete lines already in ``path`` (0 for stdout or a new file); a last line without its
    line break, from an interrupted run, is cut off."""
    if path == STDIO or not os.path.exists(path):
        return 0
    lines, end = 0, 0  # end: offset just after the last line break
    with open(path, "rb+") as handle:
        offset = 0
        for block in iter(lambda: handle.read(1 << 20), b""):
            if (count := block.count(b"\n")):
                lines += count
                end = offset + block.rindex(b"\n") + 1
            offset += len(block)
        handle.truncate(end)
    return lines


def conllu_sentences(path: str) -> int:
    """Complete sentences of a CoNLL-U file as ``--conllu`` writes it (0 for a missing file):
    every sentence ``conllu_block`` writes ends with ``CONLLU_END``."""
    if not os.path.exists(path):
        return 0
    with open(path, "rb") as handle:
        return handle.read().count(CONLLU_END)


def keep_first(path: str, count: int, terminator: bytes):
    """Cut ``path`` after its first ``count`` records, each ending with ``terminator``."""
    with open(path, "rb+") as handle:
        data, end = handle.read(), 0
        for _ in range(count):
            end = data.index(terminator, end) + len(terminator)
        handle.truncate(end)


def resume_outputs(output: str, conllu: Optional[str]) -> int:
    """Input lines already done: the complete lines of ``output`` and, with ``conllu``, as many
    complete CoNLL-U sentences; both files are cut back to that many (which also drops a sentence
    an interrupted run left half-written)."""
    lines = resume_point(output)
    if not conllu:
        return lines
    done = min(lines, conllu_sentences(conllu))
    if done < lines:
        keep_first(output, done, b"\n")
    if os.path.exists(conllu):
        keep_first(conllu, done, CONLLU_END)
    return done


def conllu_block(result) -> str:
    """One input line's CoNLL-U sentence, its blank line included (``CONLLU_END``)."""
    return f"{result.conllu or EMPTY_LINE_COMMENT}\n\n"


def sentences(input: str, output: str, tokenize: Callable[[str], list[str]],
              skip: int) -> Iterator[list[str]]:
    """Tokens of every input line after the first ``skip``; FILE:LINE errors for bad UTF-8."""
    seen = 0
    for where, raw in numbered_lines(input):
        seen += 1
        if seen > skip:
            yield tokenize(decode_line(raw, where)) if raw.strip() else []
    if seen < skip:
        raise FairseqTreeError(f"{output} already has {skip} lines but the input has only "
                               f"{seen}: it is not the output of this input")


class Summary:
    """What a ``parse_file`` did: lines parsed, empty, and flat fallbacks by reason."""

    def __init__(self, resumed: int):
        self.resumed, self.lines, self.empty = resumed, 0, 0
        self.fallbacks: collections.Counter = collections.Counter()

    def add(self, results):
        for result in results:
            self.lines += 1
            self.empty += not result.tree
            if result.fallback:
                self.fallbacks[result.fallback] += 1

    def report(self) -> str:
        fallen = sum(self.fallbacks.values())
        reasons = ", ".join(f"{n} {why}" for why, n in self.fallbacks.most_common())
        return (f"{self.lines} lines parsed ({self.resumed} already in the output were "
                f"skipped): {self.lines - fallen - self.empty} trees, {fallen} flat fallbacks"
                f"{f' ({reasons})' if reasons else ''}, {self.empty} empty lines")


def parse_file(input: str, output: str, parser: str, lang: str, options: dict,
               tokenize: str = "none", aggressive_dash_splits: bool = False, workers: int = 1,
               batch_size: int = 64, conllu: Optional[str] = None) -> Summary:
    """Parse ``input`` (``-``: standard input) into ``output`` (``-``: standard output),
    appending after the lines already there, with the backend ``parser`` for ``lang`` and its
    ``build_parser`` keywords ``options``; lines tokenized as ``moses.build_tokenizer``'s
    ``tokenize``, ``batch_size`` sentences per parser call, in ``workers`` processes; with
    ``conllu``, the dependency parses too. ``ParserUnavailable`` where the backend cannot run."""
    done = resume_outputs(output, conllu)
    spec = (parser, lang, dict(options, batch_size=batch_size))
    tokenizer = moses.build_tokenizer(tokenize, lang, aggressive=aggressive_dash_splits)
    summary = Summary(done)
    name = "<stdin>" if input == STDIO else input
    sink = sys.stdout.buffer if output == STDIO else open(output, "ab")
    parses = open(conllu, "ab") if conllu else None
    try:
        with Progress(f"parsing {name}", unit="sentences", interval=1000) as progress:
            batches = batched(sentences(input, output, tokenizer, done), batch_size)
            for results in parse_batches(spec, batches, workers):
                if parses is not None:  # first: a tree line is never ahead of its parse
                    parses.write("".join(map(conllu_block, results)).encode("utf-8"))
                    parses.flush()
                sink.write("".join(r.tree + "\n" for r in results).encode("utf-8"))
                sink.flush()  # an interrupted run loses at most the batch being parsed
                summary.add(results)
                progress.update(len(results))
    finally:
        if sink is not sys.stdout.buffer:
            sink.close()
        if parses is not None:
            parses.close()
    return summary
