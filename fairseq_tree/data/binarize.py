"""Binarising parallel (bracketed source tree, target text) files into fairseq datasets, or
source trees alone (``--only-source``, the layout of fairseq's ``sentence_prediction``). With
``Encoding.output_tree`` the target lines are bracketed trees too, written as ``OutputTree``
says: their leaves are the target dataset, their labels and spans beside it.

Source and target are always read in lockstep, one line pair at a time, so the two sides cannot
drift apart: a pair is written whole or skipped whole. Worker processes parse and encode chunks of
pairs; the main process writes them in input order. With ``NodeTargets`` the trees' labels become
per-unit class targets and the model's input keeps the structure only (see ``node_targets``).
"""

import copyreg
import functools
import io
import itertools
import logging
import pickle
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing import Pool
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import torch
from fairseq.data import Dictionary
from fairseq.data.indexed_dataset import MMapIndexedDatasetBuilder, best_fitting_int_dtype
from fairseq.tokenizer import tokenize_line

from fairseq_tree.data.label_dictionary import label_symbol
from fairseq_tree.data.node_targets import NodeTargets
from fairseq_tree.data.output_tree import OutputTree
from fairseq_tree.data.progress import Progress
from fairseq_tree.data.tree_encoding import EncodedTree, encode_tree
from fairseq_tree.data.tree_files import LABELS, LEAVES, NODE_TARGETS, SPANS, TAGS, tree_file
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.trees.bracketed import TreeSyntaxError
from fairseq_tree.trees.normal_form import NormalTree, parse_tree

logger = logging.getLogger(__name__)

CHUNK_SIZE = 1000
# Leaf indices are far below 2**31; int32 halves the span files compared with fairseq's int64.
SPAN_DTYPE = np.int32


class InputError(FairseqTreeError):
    """Bad input, located at a file and line; the message is meant for the user as is."""

    def __init__(self, path: str, lineno: Optional[int], message: str):
        self.path, self.lineno, self.reason = path, lineno, message
        where = f"{path}:{lineno}" if lineno is not None else path
        super().__init__(f"{where}: {message}")


@dataclass
class PairFiles:
    src: str
    tgt: Optional[str]  # None: source trees only


@dataclass
class RawPair:
    lineno: int
    src: bytes
    tgt: Optional[bytes]


@dataclass
class ParsedPair:
    lineno: int
    tree: Optional[NormalTree] = None
    target: Optional[List[str]] = None
    target_tree: Optional[NormalTree] = None  # with an output tree: the target's (its leaves
    # are ``target``)
    unit_targets: Optional[List[int]] = None  # with NodeTargets: class of each leaf and node
    error_side: Optional[str] = None  # "src" or "tgt" when the pair is invalid
    error: Optional[str] = None


@dataclass
class Encoding:
    """What the workers need to encode a split: dictionaries and the node targets, if any."""

    src_dict: Optional[Dictionary] = None
    tgt_dict: Optional[Dictionary] = None
    node_targets: Optional[NodeTargets] = None
    leaf_tags: bool = False  # also write the leaves' POS tags
    output_tree: Optional[OutputTree] = None  # the target lines are bracketed trees


def read_pairs(files: PairFiles) -> Iterator[RawPair]:
    """Yield aligned line pairs; stop with an error at the last line of the shorter file if one
    file has more lines than the other."""
    if files.tgt is None:
        with open(files.src, "rb") as src:
            for lineno, line in enumerate(src, start=1):
                yield RawPair(lineno, line, None)
        return
    with open(files.src, "rb") as src, open(files.tgt, "rb") as tgt:
        for lineno, (s, t) in enumerate(itertools.zip_longest(src, tgt), start=1):
            if s is None or t is None:
                short, long, rest = (files.src, files.tgt, tgt) if s is None else (files.tgt, files.src, src)
                ends = f"the file ends here, after {lineno - 1} lines" if lineno > 1 else (
                    "the file is empty")
                raise InputError(
                    short, lineno - 1 or None,
                    f"{ends}, but {long} has {lineno + sum(1 for _ in rest)}; source and target "
                    "files must have the same number of lines",
                )
            yield RawPair(lineno, s, t)


def _decode(line: bytes) -> str:
    return line.decode("utf-8").rstrip("\r\n")


def parse_pair(raw: RawPair, node_targets: Optional[NodeTargets] = None,
               output_tree: Optional[OutputTree] = None) -> ParsedPair:
    """Parse the source tree and tokenise the target of one line pair (parse it, with an
    ``output_tree``), recording what is wrong; with ``node_targets``, take the tree's labels
    as targets and hide them from the input."""
    try:
        src_text = _decode(raw.src)
    except UnicodeDecodeError as err:
        return ParsedPair(raw.lineno, error_side="src", error=f"not valid UTF-8 ({err.reason})")
    try:
        tgt_text = None if raw.tgt is None else _decode(raw.tgt)
    except UnicodeDecodeError as err:
        return ParsedPair(raw.lineno, error_side="tgt", error=f"not valid UTF-8 ({err.reason})")
    if not src_text.strip():
        return ParsedPair(raw.lineno, error_side="src", error="empty line (expected a bracketed tree)")
    try:
        tree = parse_tree(src_text)
    except TreeSyntaxError as err:
        return ParsedPair(raw.lineno, error_side="src", error=f"malformed tree: {err}")
    unit_targets = None
    if node_targets is not None:
        try:
            tree, unit_targets = node_targets.split(tree)
        except ValueError as err:
            return ParsedPair(raw.lineno, error_side="src", error=str(err))
    target_tree = None
    if tgt_text is not None and output_tree is not None:
        try:
            target_tree = output_tree.parse(tgt_text)
        except TreeSyntaxError as err:
            return ParsedPair(raw.lineno, error_side="tgt", error=f"malformed tree: {err}")
        except ValueError as err:
            return ParsedPair(raw.lineno, error_side="tgt", error=str(err))
        target = target_tree.leaves
    else:
        target = None if tgt_text is None else tokenize_line(tgt_text)
    if target is not None and not target:
        return ParsedPair(raw.lineno, error_side="tgt", error="empty line (expected target text)")
    return ParsedPair(raw.lineno, tree=tree, target=target, target_tree=target_tree,
                      unit_targets=unit_targets)


def source_leaves(files: PairFiles, skipped: set) -> Iterator[tuple]:
    """``("FILE:LINE", leaves)`` of every source tree as the binarizer reads it (the same line
    pairs and parser); leaves None at the line numbers in ``skipped``."""
    for raw in read_pairs(files):
        where = f"{files.src}:{raw.lineno}"
        yield where, None if raw.lineno in skipped else parse_pair(raw).tree.leaves


def chunked(items: Iterable, size: Optional[int] = None) -> Iterator[list]:
    iterator, size = iter(items), size or CHUNK_SIZE
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


# What worker processes encode with, installed once per process by ``_install_encoding``.
_WORKER_ENCODING = Encoding()


def _install_encoding(encoding: Encoding):
    global _WORKER_ENCODING
    _WORKER_ENCODING = encoding


@dataclass
class SymbolCounts:
    """Symbol counts of source leaves, source node labels and leaf tags (as dictionary symbols),
    target tokens and target node labels."""

    leaves: Counter = field(default_factory=Counter)
    labels: Counter = field(default_factory=Counter)
    tags: Counter = field(default_factory=Counter)
    target: Counter = field(default_factory=Counter)
    target_labels: Counter = field(default_factory=Counter)
    pairs: int = 0

    def update(self, other: "SymbolCounts"):
        self.leaves.update(other.leaves)
        self.labels.update(other.labels)
        self.tags.update(other.tags)
        self.target.update(other.target)
        self.target_labels.update(other.target_labels)
        self.pairs += other.pairs


def count_chunk(chunk: Sequence[RawPair]) -> Tuple[SymbolCounts, List[ParsedPair]]:
    """Symbol counts of the valid pairs of a chunk, and its invalid pairs."""
    counts, invalid = SymbolCounts(), []
    for raw in chunk:
        parsed = parse_pair(raw, _WORKER_ENCODING.node_targets, _WORKER_ENCODING.output_tree)
        if parsed.error:
            invalid.append(parsed)
            continue
        counts.leaves.update(parsed.tree.leaves)
        counts.labels.update(label_symbol(node.label) for node in parsed.tree.nodes)
        counts.tags.update(label_symbol(tag) for tag in parsed.tree.tags if tag is not None)
        counts.target.update(parsed.target or ())
        if parsed.target_tree is not None:
            counts.target_labels.update(OutputTree.label_symbols(parsed.target_tree))
    counts.pairs = len(chunk)
    return counts, invalid


@dataclass
class EncodedPair:
    lineno: int
    source: Optional[EncodedTree] = None
    target: Optional[torch.Tensor] = None
    target_tree: Optional[EncodedTree] = None  # with an output tree (its leaves are ``target``)
    unit_targets: Optional[torch.Tensor] = None  # (n + m,) class ids, pad where none
    invalid: Optional[ParsedPair] = None


def encode_pair(parsed: ParsedPair, encoding: Encoding) -> EncodedPair:
    target = unit_targets = target_tree = None
    if parsed.target_tree is not None:
        target_tree = encode_tree(parsed.target_tree, encoding.tgt_dict)
        target = target_tree.leaves
    elif parsed.target is not None:
        tgt_dict = encoding.tgt_dict
        target = [tgt_dict.index(token) for token in parsed.target] + [tgt_dict.eos()]
        target = torch.tensor(target, dtype=torch.long)
    if parsed.unit_targets is not None:
        unit_targets = torch.tensor(parsed.unit_targets, dtype=torch.long)
    return EncodedPair(parsed.lineno, source=encode_tree(parsed.tree, encoding.src_dict),
                       target=target, target_tree=target_tree, unit_targets=unit_targets)


def encode_chunk(chunk: Sequence[RawPair]) -> List[EncodedPair]:
    encoding, encoded = _WORKER_ENCODING, []
    for raw in chunk:
        parsed = parse_pair(raw, encoding.node_targets, encoding.output_tree)
        if parsed.error:
            encoded.append(EncodedPair(parsed.lineno, invalid=parsed))
        else:
            encoded.append(encode_pair(parsed, encoding))
    return encoded


class ChunkMapper:
    """Maps a chunk function over chunks, in order, in ``workers`` processes (inline for 1)."""

    def __init__(self, workers: int, encoding: Optional[Encoding] = None):
        self.workers = workers
        self.encoding = encoding or Encoding()

    def map(self, fn, chunks: Iterable[list]) -> Iterator:
        if self.workers <= 1:
            _install_encoding(self.encoding)
            yield from map(fn, chunks)
            return
        with Pool(self.workers, initializer=_install_encoding, initargs=(self.encoding,)) as pool:
            # imap keeps input order; a small chunksize keeps every worker busy.
            results = pool.imap(functools.partial(_pickled_by_value, fn), chunks, chunksize=1)
            yield from map(pickle.loads, results)


class _ByValuePickler(pickle.Pickler):
    """Pickles each tensor as the numpy array of its values. A tensor a worker returns through
    the pool's pipe otherwise goes by torch's shared-memory reduction, a file and milliseconds a
    tensor: binarizing the quickstart's 12,000 pairs in 2 workers took minutes, not seconds."""
    dispatch_table = copyreg.dispatch_table.copy()
    dispatch_table[torch.Tensor] = lambda tensor: (torch.from_numpy, (tensor.detach().numpy(),))


def _pickled_by_value(fn, chunk) -> bytes:
    buffer = io.BytesIO()
    _ByValuePickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(fn(chunk))
    return buffer.getvalue()


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
    has_target: bool = True
    pairs: int = 0
    leaves: int = 0
    nodes: int = 0
    leaf_unk: int = 0
    label_unk: int = 0
    tgt_tokens: int = 0
    tgt_unk: int = 0
    tgt_nodes: Optional[int] = None  # with an output tree
    units_with_target: Optional[int] = None  # with node targets
    skipped: List[InputError] = field(default_factory=list)

    def add(self, pair: EncodedPair, src_unk: int, tgt_unk: Optional[int], no_target: int):
        source = pair.source
        self.pairs += 1
        self.leaves += source.num_leaves
        self.nodes += source.num_nodes
        self.leaf_unk += int((source.leaves[:-1] == src_unk).sum())
        self.label_unk += int((source.labels == src_unk).sum())
        if pair.target is not None:
            self.tgt_tokens += len(pair.target) - 1
            self.tgt_unk += int((pair.target[:-1] == tgt_unk).sum())
        if pair.target_tree is not None:
            self.tgt_nodes += pair.target_tree.num_nodes
        if pair.unit_targets is not None:
            with_target = int((pair.unit_targets != no_target).sum())
            self.units_with_target = (self.units_with_target or 0) + with_target

    def lines(self) -> List[str]:
        def pct(part, whole):
            return f"{100.0 * part / max(whole, 1):.2f}%"

        what, lines = ("pairs", "line pairs") if self.has_target else ("trees", "lines")
        target = f", {self.tgt_tokens} target tokens" if self.has_target else ""
        if self.tgt_nodes is not None:
            target += f", {self.tgt_nodes} target nodes"
        out = [
            f"{self.name}: {self.pairs} {what}, {self.leaves} leaves, {self.nodes} nodes "
            f"({self.nodes / max(self.leaves, 1):.2f} per leaf){target}",
            f"{self.name}: <unk> rate source leaves {pct(self.leaf_unk, self.leaves)}, "
            f"node labels {pct(self.label_unk, self.nodes)}"
            + (f", target {pct(self.tgt_unk, self.tgt_tokens)}" if self.has_target else ""),
        ]
        if self.units_with_target is not None:
            out.append(f"{self.name}: {self.units_with_target} of {self.leaves + self.nodes} "
                       "leaves and nodes have a target class")
        out.append(f"{self.name}: {len(self.skipped)} {lines} skipped")
        out += [f"{self.name}: skipped {err}" for err in self.skipped[:10]]
        if len(self.skipped) > 10:
            out.append(f"{self.name}: ... and {len(self.skipped) - 10} more skipped")
        return out


class SplitWriter:
    """The datasets of one split (see ``tree_files``): leaves, node labels, node spans (source),
    the target if any, the unit targets with node targets, and the leaves' POS tags with
    ``encoding.leaf_tags``."""

    def __init__(self, src_prefix: str, tgt_prefix: Optional[str], encoding: Encoding):
        src_dtype = best_fitting_int_dtype(len(encoding.src_dict))
        outputs = {kind: (tree_file(src_prefix, kind), dtype) for kind, dtype in
                   ((LEAVES, src_dtype), (LABELS, src_dtype), (SPANS, SPAN_DTYPE))}
        if tgt_prefix is not None:
            tgt_dtype = best_fitting_int_dtype(len(encoding.tgt_dict))
            outputs["target"] = (tgt_prefix, tgt_dtype)
            if encoding.output_tree is not None:  # the nodes of the written trees
                outputs.update({("target", kind): (tree_file(tgt_prefix, kind), dtype)
                                for kind, dtype in ((LABELS, tgt_dtype), (SPANS, SPAN_DTYPE))})
        if encoding.node_targets is not None:
            classes = len(encoding.node_targets.classes)
            outputs[NODE_TARGETS] = (tree_file(src_prefix, NODE_TARGETS),
                                     best_fitting_int_dtype(classes))
        if encoding.leaf_tags:
            outputs[TAGS] = (tree_file(src_prefix, TAGS), src_dtype)
        self.builders = {  # item name -> (output prefix, builder)
            item: (prefix, MMapIndexedDatasetBuilder(prefix + ".bin", dtype=dtype))
            for item, (prefix, dtype) in outputs.items()
        }

    def add(self, pair: EncodedPair):
        items = {LEAVES: pair.source.leaves, LABELS: pair.source.labels,
                 SPANS: pair.source.spans.view(-1), "target": pair.target,
                 NODE_TARGETS: pair.unit_targets, TAGS: pair.source.tags}
        if pair.target_tree is not None:
            items.update({("target", LABELS): pair.target_tree.labels,
                          ("target", SPANS): pair.target_tree.spans.view(-1)})
        for item, (_, builder) in self.builders.items():
            builder.add_item(items[item])

    def finalize(self):
        for prefix, builder in self.builders.values():
            builder.finalize(prefix + ".idx")


def binarize_split(
    name: str,
    files: PairFiles,
    src_prefix: str,
    tgt_prefix: Optional[str],
    encoding: Encoding,
    workers: int,
    skip_invalid: bool,
) -> SplitSummary:
    """Write the datasets of one split under the given output prefixes and summarise it
    (``tgt_prefix`` None: source trees only)."""
    summary = SplitSummary(name, has_target=tgt_prefix is not None,
                           tgt_nodes=0 if encoding.output_tree is not None else None)
    writer = SplitWriter(src_prefix, tgt_prefix, encoding)
    mapper = ChunkMapper(workers, encoding)
    src_unk = encoding.src_dict.unk()
    tgt_unk = encoding.tgt_dict.unk() if encoding.tgt_dict is not None else None
    no_target = encoding.node_targets.classes.pad() if encoding.node_targets else -1
    with Progress(f"binarizing {name}") as progress:
        for encoded in mapper.map(encode_chunk, chunked(read_pairs(files))):
            for pair in encoded:
                if pair.invalid is not None:
                    summary.skipped.append(_handle_invalid(pair.invalid, files, skip_invalid))
                    continue
                writer.add(pair)
                summary.add(pair, src_unk, tgt_unk, no_target)
            progress.update(len(encoded))
    writer.finalize()
    return summary
