"""Text steps of the data recipes: Moses tokenisation (sacremoses), cleaning, splitting, writing.

Each step maps a stream of ``Pair``s to a stream of ``Pair``s, both sides together (the
classification recipes: ``Example``s, a document's sentences and its class). Files are
written through ``open_output``: a file appears under its name only once complete, so a step
whose outputs all exist has finished and a re-run skips it.
"""

import contextlib
import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from classification_corpora import Example
from corpora import Pair

from fairseq_tree.data.progress import Progress
from fairseq_tree.errors import CliError
from fairseq_tree.line_files import batched, open_output
from fairseq_tree.parsing import moses as package_moses
from fairseq_tree.parsing.base import tree_problem
from fairseq_tree.parsing.raw_text import document_sentences

CHUNK = 2000  # pairs per task sent to a tokenizer process


@dataclass(frozen=True)
class MosesSteps:
    """The Moses steps of a recipe (fairseq's prepare-*.sh), applied to one side.

    The steps are the package's ``MosesSteps`` (what inference repeats); ``quote`` is for the
    test and valid sets (both recipes), ``normalize`` and ``aggressive`` for WMT.
    """

    src: str
    tgt: str
    normalize: bool = False
    aggressive: bool = False
    quote: bool = False

    @property
    def side(self) -> package_moses.MosesSteps:
        return package_moses.MosesSteps(self.normalize, self.aggressive, self.quote)


def moses(text: str, lang: str, steps: MosesSteps) -> str:
    """One line through the recipe's Moses steps; tokens joined by single spaces."""
    return " ".join(steps.side.tokenize(text, lang))


def _tokenize_chunk(task: tuple[MosesSteps, bool, list[Pair]]) -> list[Pair]:
    steps, keep_raw, pairs = task
    return [Pair(moses(p.src, steps.src, steps), moses(p.tgt, steps.tgt, steps), p.where,
                 (p.src, p.tgt) if keep_raw else None) for p in pairs]


def tokenize(pairs: Iterable[Pair], steps: MosesSteps, workers: int, desc: str,
             keep_raw: bool = False) -> Iterator[Pair]:
    """Tokenize both sides of every pair, in order, over ``workers`` processes."""
    tasks = ((steps, keep_raw, list(chunk)) for chunk in batched(pairs, CHUNK))
    return map_chunks(_tokenize_chunk, tasks, workers, f"tokenizing {desc}")


def map_chunks(function: Callable[[object], list], tasks: Iterable, workers: int,
               desc: str) -> Iterator:
    """The items of ``function(task)`` for every task (a chunk of work), in order, over
    ``workers`` processes (``function`` must be a module-level function)."""
    with contextlib.ExitStack() as stack:
        progress = stack.enter_context(Progress(desc))
        pool = stack.enter_context(multiprocessing.Pool(workers)) if workers > 1 else None
        # A few chunks per process at a time: Pool.imap would read the whole corpus ahead.
        for window in batched(tasks, max(workers, 1) * 4):
            for chunk in (pool.imap(function, window) if pool else map(function, window)):
                yield from chunk
                progress.update(len(chunk))


def counted(items: Iterable, desc: str) -> Iterator:
    """The items, with progress shown for a long pass."""
    with Progress(desc) as progress:
        for item in items:
            yield item
            progress.update(1)


@dataclass
class Cleaning:
    """clean-corpus-n.perl: keep a pair when both sides have ``min_len``-``max_len`` tokens,
    neither side is more than ``ratio`` times longer than the other, and no token is longer
    than 1000 characters. ``length`` counts a side's tokens (words, or BPE pieces for WMT)."""

    ratio: float
    min_len: int
    max_len: int
    length: Callable[[str], int] = lambda text: len(text.split())
    kept: int = 0
    dropped: int = 0

    def keeps(self, pair: Pair) -> bool:
        n_src, n_tgt = self.length(pair.src), self.length(pair.tgt)
        if not (self.min_len <= n_src <= self.max_len and self.min_len <= n_tgt <= self.max_len):
            return False
        if n_src / n_tgt > self.ratio or n_tgt / n_src > self.ratio:
            return False
        return max(map(len, (pair.src + " " + pair.tgt).split())) <= 1000

    def __call__(self, pairs: Iterable[Pair]) -> Iterator[Pair]:
        for pair in pairs:
            if self.keeps(pair):
                self.kept += 1
                yield pair
            else:
                self.dropped += 1


def length_range(pairs: Iterable[Pair], low: int, high: int,
                 left_out: Callable[[], None]) -> Iterator[Pair]:
    """The pairs whose source has ``low``-``high`` tokens; ``left_out()`` for each other."""
    for pair in pairs:
        if low <= len(pair.src.split()) <= high:
            yield pair
        else:
            left_out()


def evenly_spaced(items: list, limit: int | None) -> list:
    """At most ``limit`` items spread evenly over the list (all of them without a limit), so that
    a smaller corpus still samples every part (every book) of the larger one."""
    if limit is None or limit >= len(items):
        return items
    return [items[i * len(items) // limit] for i in range(limit)]


def every_nth(n: int | None) -> Callable[[int], str]:
    """fairseq's split: line numbers (1-based) divisible by ``n`` go to valid, others to train."""
    return lambda number: "valid" if n and number % n == 0 else "train"


def write_pairs(pairs: Iterable[Pair], outputs: dict[str, tuple[Path, Path]],
                route: Callable[[int], str] = lambda number: "test") -> dict[str, int]:
    """Write each pair to the (source, target) files of the split ``route(number)`` chooses.
    Every file appears only once all are complete. Returns the number of pairs per split."""
    counts = dict.fromkeys(outputs, 0)
    with contextlib.ExitStack() as stack:
        sinks = {split: tuple(stack.enter_context(open_output(str(path))) for path in paths)
                 for split, paths in outputs.items()}
        for number, pair in enumerate(pairs, start=1):
            split = route(number)
            for sink, text in zip(sinks[split], _sides(pair, split, outputs)):
                sink.write(text.encode("utf-8") + b"\n")
            counts[split] += 1
    return counts


def _sides(pair: Pair, split: str, outputs: dict) -> tuple[str, ...]:
    """The texts written for one pair: tokenized source and target, plus, where a split has
    four files, the raw source and target (the references)."""
    if len(outputs[split]) == 4:
        return pair.src, pair.tgt, *pair.raw
    return pair.src, pair.tgt


def drop_empty(pairs: Iterable[Pair], log: Callable[[str], None]) -> Iterator[Pair]:
    """Leave out (and report) a test pair with an empty side: no tree can be built for it."""
    for pair in pairs:
        if pair.src and pair.tgt:
            yield pair
        else:
            log(f"{pair.where}: empty segment on one side after tokenization; pair left out")


def count_lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 20), b""))


def check_leaves(tree: str, text: str, where_tree: str, where_text: str):
    """The parser's promise, checked: a tree's leaves are exactly its line's tokens."""
    problem = tree_problem(tree, text.split())
    if problem:
        raise CliError(f"{where_tree}: {problem} (tokens: {where_text})")


# ---------------------------------------------------------------------------------------------
# Classification examples: documents of sentences (prepare_classification.py)


def tokenized(example: Example, split_sentences: bool, max_words: int) -> tuple[Example, bool]:
    """The example with Moses-tokenized sentences (with ``split_sentences`` its texts are
    paragraphs, split into sentences by pysbd first), empty ones dropped, cut to
    ``max_words`` words (0: not cut); and whether it was cut. The package's
    ``document_sentences``: what inference repeats on raw text."""
    sentences, cut = document_sentences(example.sentences, split_sentences, max_words)
    return Example(example.where, sentences, example.label), cut


def tokenize_examples(task: tuple[bool, int, list[Example]]) -> list[tuple[Example, bool]]:
    """``tokenized`` for a chunk of examples (``map_chunks``' function)."""
    split_sentences, max_words, examples = task
    return [tokenized(x, split_sentences, max_words) for x in examples]


def write_lines(paths: list[Path], rows: Iterable[list[str]]):
    """Row k's fields to the files' line k, all files together (complete or not at all)."""
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        sinks = [stack.enter_context(open_output(str(path))) for path in paths]
        for row in rows:
            for sink, text in zip(sinks, row, strict=True):
                sink.write(text.encode("utf-8") + b"\n")


def write_example(sinks: list, example: Example):
    """An example into text/{split}.{tok,count,label[,leaves]} (open files)."""
    sinks[0].write("".join(s + "\n" for s in example.sentences).encode("utf-8"))
    sinks[1].write(f"{len(example.sentences)}\n".encode())
    sinks[2].write(f"{example.label}\n".encode())
    if len(sinks) > 3:
        sinks[3].write("".join(s + "\n" for s in example.leaves).encode("utf-8"))


def write_examples(paths: list[Path], examples: Iterable[Example]):
    """Examples into text/{split}.{tok,count,label} (complete or not at all)."""
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        sinks = [stack.enter_context(open_output(str(path))) for path in paths]
        for example in examples:
            write_example(sinks, example)
