"""Binarising parallel (bracketed source tree, target text) files into fairseq datasets.

Source and target are always read in lockstep, one line pair at a time, so the two sides cannot
drift apart: a pair is written whole or skipped whole. Worker processes parse and encode chunks of
pairs; the main process writes them in input order.
"""

import itertools
import logging
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing import Pool
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import torch
from fairseq.data import Dictionary
from fairseq.data.indexed_dataset import MMapIndexedDatasetBuilder, best_fitting_int_dtype
from fairseq.tokenizer import tokenize_line

from fairseq_tree.data.progress import Progress
from fairseq_tree.data.tree_encoding import EncodedTree, encode_tree, label_symbol
from fairseq_tree.trees.bracketed import TreeSyntaxError
from fairseq_tree.trees.normal_form import NormalTree, parse_tree

logger = logging.getLogger(__name__)

CHUNK_SIZE = 1000
# Leaf indices are far below 2**31; int32 halves the span files compared with fairseq's int64.
SPAN_DTYPE = np.int32


class InputError(ValueError):
    """Bad input, located at a file and line; the message is meant for the user as is."""

    def __init__(self, path: str, lineno: Optional[int], message: str):
        self.path, self.lineno, self.reason = path, lineno, message
        where = f"{path}:{lineno}" if lineno is not None else path
        super().__init__(f"{where}: {message}")


@dataclass
class PairFiles:
    src: str
    tgt: str


@dataclass
class RawPair:
    lineno: int
    src: bytes
    tgt: bytes


@dataclass
class ParsedPair:
    lineno: int
    tree: Optional[NormalTree] = None
    target: Optional[List[str]] = None
    error_side: Optional[str] = None  # "src" or "tgt" when the pair is invalid
    error: Optional[str] = None


def read_pairs(files: PairFiles) -> Iterator[RawPair]:
    """Yield aligned line pairs; stop with an error if one file has more lines than the other."""
    with open(files.src, "rb") as src, open(files.tgt, "rb") as tgt:
        for lineno, (s, t) in enumerate(itertools.zip_longest(src, tgt), start=1):
            if s is None or t is None:
                short, long, rest = (files.src, files.tgt, tgt) if s is None else (files.tgt, files.src, src)
                raise InputError(
                    short, None,
                    f"has {lineno - 1} lines but {long} has {lineno + sum(1 for _ in rest)}; "
                    "source and target files must have the same number of lines",
                )
            yield RawPair(lineno, s, t)


def _decode(line: bytes) -> str:
    return line.decode("utf-8").rstrip("\r\n")


def parse_pair(raw: RawPair) -> ParsedPair:
    """Parse the source tree and tokenise the target of one line pair, recording what is wrong."""
    try:
        src_text = _decode(raw.src)
    except UnicodeDecodeError as err:
        return ParsedPair(raw.lineno, error_side="src", error=f"not valid UTF-8 ({err.reason})")
    try:
        tgt_text = _decode(raw.tgt)
    except UnicodeDecodeError as err:
        return ParsedPair(raw.lineno, error_side="tgt", error=f"not valid UTF-8 ({err.reason})")
    if not src_text.strip():
        return ParsedPair(raw.lineno, error_side="src", error="empty line (expected a bracketed tree)")
    try:
        tree = parse_tree(src_text)
    except TreeSyntaxError as err:
        return ParsedPair(raw.lineno, error_side="src", error=f"malformed tree: {err}")
    target = tokenize_line(tgt_text)
    if not target:
        return ParsedPair(raw.lineno, error_side="tgt", error="empty line (expected target text)")
    return ParsedPair(raw.lineno, tree=tree, target=target)


def chunked(items: Iterable, size: Optional[int] = None) -> Iterator[list]:
    iterator, size = iter(items), size or CHUNK_SIZE
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


# Dictionaries for worker processes, installed once per process by ``_install_dictionaries``.
_WORKER_DICTS: Tuple[Optional[Dictionary], Optional[Dictionary]] = (None, None)


def _install_dictionaries(src_dict: Optional[Dictionary], tgt_dict: Optional[Dictionary]):
    global _WORKER_DICTS
    _WORKER_DICTS = (src_dict, tgt_dict)


@dataclass
class SymbolCounts:
    """Symbol counts of source leaves, source node labels and leaf tags (as dictionary symbols)
    and target."""

    leaves: Counter = field(default_factory=Counter)
    labels: Counter = field(default_factory=Counter)
    tags: Counter = field(default_factory=Counter)
    target: Counter = field(default_factory=Counter)
    pairs: int = 0

    def update(self, other: "SymbolCounts"):
        self.leaves.update(other.leaves)
        self.labels.update(other.labels)
        self.tags.update(other.tags)
        self.target.update(other.target)
        self.pairs += other.pairs


def count_chunk(chunk: Sequence[RawPair]) -> Tuple[SymbolCounts, List[ParsedPair]]:
    """Symbol counts of the valid pairs of a chunk, and its invalid pairs."""
    counts, invalid = SymbolCounts(), []
    for parsed in map(parse_pair, chunk):
        if parsed.error:
            invalid.append(parsed)
            continue
        counts.leaves.update(parsed.tree.leaves)
        counts.labels.update(label_symbol(node.label) for node in parsed.tree.nodes)
        counts.tags.update(label_symbol(tag) for tag in parsed.tree.tags if tag is not None)
        counts.target.update(parsed.target)
    counts.pairs = len(chunk)
    return counts, invalid


@dataclass
class EncodedPair:
    lineno: int
    source: Optional[EncodedTree] = None
    target: Optional[torch.Tensor] = None
    invalid: Optional[ParsedPair] = None


def encode_chunk(chunk: Sequence[RawPair]) -> List[EncodedPair]:
    src_dict, tgt_dict = _WORKER_DICTS
    encoded = []
    for parsed in map(parse_pair, chunk):
        if parsed.error:
            encoded.append(EncodedPair(parsed.lineno, invalid=parsed))
            continue
        target = [tgt_dict.index(token) for token in parsed.target] + [tgt_dict.eos()]
        encoded.append(
            EncodedPair(
                parsed.lineno,
                source=encode_tree(parsed.tree, src_dict),
                target=torch.tensor(target, dtype=torch.long),
            )
        )
    return encoded


class ChunkMapper:
    """Maps a chunk function over chunks, in order, in ``workers`` processes (inline for 1)."""

    def __init__(self, workers: int, src_dict=None, tgt_dict=None):
        self.workers = workers
        self.dicts = (src_dict, tgt_dict)

    def map(self, fn, chunks: Iterable[list]) -> Iterator:
        if self.workers <= 1:
            _install_dictionaries(*self.dicts)
            yield from map(fn, chunks)
            return
        with Pool(self.workers, initializer=_install_dictionaries, initargs=self.dicts) as pool:
            # imap keeps input order; a small chunksize keeps every worker busy.
            yield from pool.imap(fn, chunks, chunksize=1)


def _handle_invalid(pair: ParsedPair, files: PairFiles, skip_invalid: bool):
    path = files.src if pair.error_side == "src" else files.tgt
    error = InputError(path, pair.lineno, pair.error)
    if not skip_invalid:
        raise error
    return error


def count_symbols(files: PairFiles, mapper: ChunkMapper, skip_invalid: bool) -> SymbolCounts:
    """Count dictionary symbols of a split; invalid pairs raise unless ``skip_invalid``."""
    total = SymbolCounts()
    with Progress(f"counting {files.src}") as progress:
        for counts, invalid in mapper.map(count_chunk, chunked(read_pairs(files))):
            for pair in invalid:
                _handle_invalid(pair, files, skip_invalid)
            total.update(counts)
            progress.update(counts.pairs)
    return total


def build_dictionary(
    counts: Counter, threshold: int, nwords: int, padding_factor: int, always: Counter = None
) -> Dictionary:
    """fairseq's frequency-sorted dictionary over ``counts + always``, where the symbols of
    ``always`` (node labels) survive the ``threshold``/``nwords`` cut: a label must never be
    <unk>."""
    always = always or Counter()
    dictionary = Dictionary()
    for symbol, count in (counts + always).items():
        dictionary.add_symbol(symbol, n=count)
    dictionary.finalize(threshold=threshold, nwords=nwords, padding_factor=1)
    for symbol in sorted(always, key=lambda s: (-always[s], s)):
        if symbol not in dictionary:
            dictionary.add_symbol(symbol, n=always[symbol])
    dictionary.pad_to_multiple_(padding_factor)
    return dictionary


@dataclass
class SplitSummary:
    name: str
    pairs: int = 0
    leaves: int = 0
    nodes: int = 0
    leaf_unk: int = 0
    label_unk: int = 0
    tgt_tokens: int = 0
    tgt_unk: int = 0
    skipped: List[InputError] = field(default_factory=list)

    def add(self, pair: EncodedPair, src_unk: int, tgt_unk: int):
        source = pair.source
        self.pairs += 1
        self.leaves += source.num_leaves
        self.nodes += source.num_nodes
        self.leaf_unk += int((source.leaves[:-1] == src_unk).sum())
        self.label_unk += int((source.labels == src_unk).sum())
        self.tgt_tokens += len(pair.target) - 1
        self.tgt_unk += int((pair.target[:-1] == tgt_unk).sum())

    def lines(self) -> List[str]:
        def pct(part, whole):
            return f"{100.0 * part / max(whole, 1):.2f}%"

        out = [
            f"{self.name}: {self.pairs} pairs, {self.leaves} leaves, {self.nodes} nodes "
            f"({self.nodes / max(self.leaves, 1):.2f} per leaf), {self.tgt_tokens} target tokens",
            f"{self.name}: <unk> rate source leaves {pct(self.leaf_unk, self.leaves)}, "
            f"node labels {pct(self.label_unk, self.nodes)}, "
            f"target {pct(self.tgt_unk, self.tgt_tokens)}",
            f"{self.name}: {len(self.skipped)} line pairs skipped",
        ]
        out += [f"{self.name}: skipped {err}" for err in self.skipped[:10]]
        if len(self.skipped) > 10:
            out.append(f"{self.name}: ... and {len(self.skipped) - 10} more skipped")
        return out


class SplitWriter:
    """The four datasets of one split: leaves, node labels, node spans (source) and target; with
    ``leaf_tags`` a fifth, the leaves' POS tags (``{src_prefix}.tags``)."""

    def __init__(self, src_prefix: str, tgt_prefix: str, src_vocab: int, tgt_vocab: int,
                 leaf_tags: bool = False):
        src_dtype, tgt_dtype = best_fitting_int_dtype(src_vocab), best_fitting_int_dtype(tgt_vocab)
        self.builders = {
            src_prefix: MMapIndexedDatasetBuilder(src_prefix + ".bin", dtype=src_dtype),
            src_prefix + ".labels": MMapIndexedDatasetBuilder(src_prefix + ".labels.bin", dtype=src_dtype),
            src_prefix + ".spans": MMapIndexedDatasetBuilder(src_prefix + ".spans.bin", dtype=SPAN_DTYPE),
            tgt_prefix: MMapIndexedDatasetBuilder(tgt_prefix + ".bin", dtype=tgt_dtype),
        }
        if leaf_tags:
            self.builders[src_prefix + ".tags"] = MMapIndexedDatasetBuilder(
                src_prefix + ".tags.bin", dtype=src_dtype)

    def add(self, pair: EncodedPair):
        items = (pair.source.leaves, pair.source.labels, pair.source.spans.view(-1), pair.target,
                 pair.source.tags)
        for builder, item in zip(self.builders.values(), items):
            builder.add_item(item)

    def finalize(self):
        for prefix, builder in self.builders.items():
            builder.finalize(prefix + ".idx")


def binarize_split(
    name: str,
    files: PairFiles,
    src_prefix: str,
    tgt_prefix: str,
    src_dict: Dictionary,
    tgt_dict: Dictionary,
    workers: int,
    skip_invalid: bool,
    leaf_tags: bool = False,
) -> SplitSummary:
    """Write the datasets of one split under the given output prefixes and summarise it."""
    summary = SplitSummary(name)
    writer = SplitWriter(src_prefix, tgt_prefix, len(src_dict), len(tgt_dict), leaf_tags)
    mapper = ChunkMapper(workers, src_dict, tgt_dict)
    with Progress(f"binarizing {name}") as progress:
        for encoded in mapper.map(encode_chunk, chunked(read_pairs(files))):
            for pair in encoded:
                if pair.invalid is not None:
                    summary.skipped.append(_handle_invalid(pair.invalid, files, skip_invalid))
                    continue
                writer.add(pair)
                summary.add(pair, src_dict.unk(), tgt_dict.unk())
            progress.update(len(encoded))
    writer.finalize()
    return summary
