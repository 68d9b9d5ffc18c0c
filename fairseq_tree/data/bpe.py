"""Subword segmentation of tree leaves (and target text): the library behind ``fairseq-tree-bpe``.

    learn_codes("bpe.codes", 32000, trees=["train.en"], text=["train.de"])
    apply_codes("bpe.codes", "train.en", "train.bpe.en")
    apply_codes("bpe.codes", "train.de", "train.bpe.de", text=True)

Learning reads the leaves of the tree files plus the text files, so source and target share one
model (the joint vocabulary of the paper). Applying to trees segments every leaf on its own and
turns a split word into a node over its pieces (``fairseq_tree.trees.subwords``), written back as
one bracketed tree per line; ``text`` segments plain lines (``first_piece``: one unit per word,
for the constituent_transformer masked LM). subword-nmt and sentencepiece do the segmenting.
Lines are split on "\\n" only and read as UTF-8, line by line, so that a bad line is reported
(a ``LineError`` naming FILE:LINE) or, with ``skip_invalid``, copied through, without losing
line alignment. Files named ``-`` are the standard streams.
"""

import io
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Optional

from fairseq_tree.data.progress import Progress
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.line_files import STDIO, LineError, decode_line, numbered_lines, open_output
from fairseq_tree.trees.bracketed import TreeSyntaxError
from fairseq_tree.trees.normal_form import NormalTree, parse_tree, to_bracketed
from fairseq_tree.trees.subwords import first_pieces, split_words

SUBWORD_NMT, SENTENCEPIECE = "subword-nmt", "sentencepiece"

Segmenter = Callable[[list[str]], list[str]]  # words -> pieces, each word on its own


def read_tree(raw: bytes, where: str) -> NormalTree:
    """The normal form of the tree on one line; an empty or malformed line is a ``LineError``."""
    line = decode_line(raw, where)
    if not line.strip():
        raise LineError(f"{where}: empty line (expected a bracketed tree)")
    try:
        return parse_tree(line)
    except TreeSyntaxError as err:
        raise LineError(f"{where}: malformed tree: {err}") from None


def tree_words(raw: bytes, where: str) -> list[str]:
    return read_tree(raw, where).leaves


def text_words(raw: bytes, where: str) -> list[str]:
    return decode_line(raw, where).split()


def training_lines(trees: Sequence[str], text: Sequence[str],
                   skip_invalid: bool = False) -> Iterator[str]:
    """Training lines for the subword learner: the leaves of every tree, then the text lines."""
    sources = [(path, tree_words) for path in trees] + [(path, text_words) for path in text]
    for path, words in sources:
        for where, raw in numbered_lines(path):
            try:
                yield " ".join(words(raw, where))
            except LineError:
                if not skip_invalid:
                    raise


def learn_codes(output: str, symbols: int, trees: Sequence[str] = (), text: Sequence[str] = (),
                method: str = SUBWORD_NMT, min_frequency: int = 2,
                character_coverage: float = 1.0, normalization_rule: str = "identity",
                skip_invalid: bool = False):
    """Learn one joint subword model from the leaves of ``trees`` and the lines of ``text``:
    subword-nmt codes (``symbols`` merges, pairs seen ``min_frequency`` times) written to
    ``output``, or a sentencepiece BPE model (vocabulary ``symbols``) as ``output``.model and
    .vocab. ``normalization_rule`` identity keeps every token verbatim (sentencepiece's nmt_nfkc
    would rewrite characters, so a leaf's pieces would no longer spell it)."""
    if not trees and not text:
        raise FairseqTreeError("no tree or text file to learn subwords from")
    lines = training_lines(trees, text, skip_invalid)
    if method == SUBWORD_NMT:
        from subword_nmt.learn_bpe import learn_bpe

        codes = io.StringIO()  # small (one line per merge); written only once learning succeeded
        learn_bpe(lines, codes, symbols, min_frequency=min_frequency)
        with open_output(output) as sink:
            sink.write(codes.getvalue().encode("utf-8"))
        return
    import sentencepiece as spm

    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=lines, model_prefix=output, vocab_size=symbols,
            character_coverage=character_coverage, normalization_rule_name=normalization_rule,
            model_type="bpe", minloglevel=2,
        )
    except RuntimeError as err:  # sentencepiece reports bad settings and data as RuntimeError
        raise FairseqTreeError(f"sentencepiece: {err}") from None


def build_segmenter(codes: Optional[str] = None, sentencepiece_model: Optional[str] = None,
                    vocabulary: Optional[str] = None,
                    vocabulary_threshold: Optional[int] = None) -> Segmenter:
    """words -> pieces, each word segmented on its own, from subword-nmt ``codes`` (only pieces
    of ``vocabulary`` seen ``vocabulary_threshold`` times, as apply-bpe) or a sentencepiece
    model."""
    if codes:
        from subword_nmt.apply_bpe import BPE, read_vocabulary

        vocab = None
        if vocabulary:
            with open(vocabulary, encoding="utf-8") as handle:
                vocab = read_vocabulary(handle, vocabulary_threshold)
        with open(codes, encoding="utf-8") as handle:
            bpe = BPE(handle, vocab=vocab)
        return bpe.segment_tokens
    if vocabulary:
        raise FairseqTreeError("a vocabulary works with subword-nmt codes only")
    import sentencepiece as spm

    processor = spm.SentencePieceProcessor(model_file=sentencepiece_model)
    # One word per call, exactly as for tree leaves; sentencepiece marks each word start with "▁".
    return lambda words: [p for w in words for p in processor.encode(w, out_type=str)]


@dataclass
class ApplyStats:
    """What ``segment_file`` did, for its summary."""

    lines: int = 0
    words: int = 0
    pieces: int = 0
    skipped: int = 0

    def report(self) -> str:
        return (f"fairseq-tree-bpe: {self.lines} lines, {self.words} words -> {self.pieces} "
                f"subwords ({self.pieces / max(self.words, 1):.2f} per word), {self.skipped} "
                "malformed lines copied unchanged")


@dataclass
class LineSegmenter:
    """Segments one line: a tree's leaves, or (``text``) the words of a plain line."""

    segment: Segmenter
    text: bool = False
    first_piece: bool = False  # with text: one unit per word, its first piece
    skip_invalid: bool = False  # copy a bad line through, counted, instead of raising

    def __call__(self, raw: bytes, where: str, stats: ApplyStats) -> bytes:
        """One segmented output line (without line break) for one input line."""
        try:
            if self.text:
                words = decode_line(raw, where).split()
                pieces = first_pieces(words, self.segment) if self.first_piece \
                    else self.segment(words)
                text = " ".join(pieces)
            else:
                tree = read_tree(raw, where)
                split = split_words(tree, lambda word: self.segment([word]))
                words, pieces, text = tree.leaves, split.leaves, to_bracketed(split)
        except LineError:
            if not self.skip_invalid:
                raise
            stats.skipped += 1
            return raw
        stats.words += len(words)
        stats.pieces += len(pieces)
        return text.encode("utf-8")


def segment_file(segment: Segmenter, source: str, output: str, text: bool = False,
                 first_piece: bool = False, skip_invalid: bool = False) -> ApplyStats:
    """Segment every line of ``source`` into ``output`` (see ``LineSegmenter``), keeping line
    alignment; ``output`` appears only once complete."""
    if first_piece and not text:
        raise FairseqTreeError("first_piece works with text only")
    line_segmenter, stats = LineSegmenter(segment, text, first_piece, skip_invalid), ApplyStats()
    name = "<stdin>" if source == STDIO else source
    with open_output(output) as sink, Progress(f"segmenting {name}", unit="lines") as progress:
        for where, raw in numbered_lines(source):
            sink.write(line_segmenter(raw, where, stats) + b"\n")
            stats.lines += 1
            progress.update(1)
    return stats


def apply_codes(codes: str, source: str, output: str, text: bool = False,
                first_piece: bool = False, skip_invalid: bool = False) -> ApplyStats:
    """``segment_file`` with the subword-nmt ``codes``: the leaves of the trees of ``source``
    (or, with ``text``, its plain lines) into ``output``."""
    return segment_file(build_segmenter(codes), source, output, text, first_piece, skip_invalid)
