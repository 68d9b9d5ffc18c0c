"""Pretrained word vectors from a GloVe-format text file, for the dictionary of a model.

Ahmed et al. (2019) start from frozen 300-d GloVe vectors. A GloVe file holds one word and its
values per line, separated by spaces, and no header; word2vec's text format adds a first line
"COUNT DIM", which is recognised and checked. fairseq's ``utils.load_embedding`` copies the
vectors into an ``nn.Embedding`` through the dictionary. Its reader ``utils.parse_embedding`` is
not used: it always drops the first line (GloVe's first word, "the") and keeps every vector of a
file that may hold millions, where only the dictionary's are needed. Words are matched exactly,
as written (a few lines of glove.840B hold spaces inside the word, so the word is everything
before the last DIM values).
"""

from dataclasses import dataclass
from typing import Dict

import torch
from fairseq import utils
from fairseq.data import Dictionary
from torch import nn

from fairseq_tree.data.binarize import InputError


@dataclass
class EmbeddingCoverage:
    """How many dictionary types (special symbols excluded) got a pretrained vector."""

    found: int
    types: int
    path: str

    def __str__(self) -> str:
        share = 100.0 * self.found / max(self.types, 1)
        return (f"{self.path}: vectors for {self.found} of {self.types} dictionary types "
                f"({share:.2f}%)")


def parse_vector_line(line: str, dim: int, path: str, lineno: int):
    """(word, values) of one line; too few values, no word or a non-number is an error."""
    parts = line.rstrip("\r\n").rstrip(" ").rsplit(" ", dim)
    if len(parts) != dim + 1 or not parts[0]:
        raise InputError(path, lineno, f"expected a word and {dim} values")
    try:
        return parts[0], [float(value) for value in parts[1:]]
    except ValueError as err:
        raise InputError(path, lineno, f"not a number ({err})") from None


def is_word2vec_header(line: str, dim: int, path: str) -> bool:
    """Whether the first line is word2vec's "COUNT DIM" header; either way the file's vectors
    must have ``dim`` values (checked here once: a longer vector would otherwise pass as a word
    with spaces)."""
    fields = line.split()
    header = len(fields) == 2 and all(field.isdigit() for field in fields)
    found = int(fields[1]) if header else len(fields) - 1
    if found != dim:
        raise InputError(path, 1, f"the vectors have {found} dimensions, the embedding {dim}")
    return header


def read_text_embeddings(path: str, dictionary: Dictionary, dim: int) -> Dict[str, torch.Tensor]:
    """The vectors of the dictionary's words in a GloVe-format file (the first of duplicates)."""
    wanted, vectors = set(dictionary.symbols), {}
    try:
        handle = open(path, "rb")
    except OSError as err:
        raise InputError(path, None, err.strerror or "cannot be read") from None
    with handle:
        for lineno, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise InputError(path, lineno, f"not valid UTF-8 ({err.reason})") from None
            if lineno == 1 and is_word2vec_header(line, dim, path):
                continue
            word, values = parse_vector_line(line, dim, path, lineno)
            if word in wanted and word not in vectors:
                vectors[word] = torch.tensor(values)
    return vectors


def load_text_embeddings(path: str, dictionary: Dictionary,
                         embedding: nn.Embedding) -> EmbeddingCoverage:
    """Fill the rows of ``embedding`` (one per dictionary symbol) whose words ``path`` holds;
    the other rows keep their values. Returns the coverage; bad lines raise ``InputError``."""
    if embedding.num_embeddings < len(dictionary):
        raise ValueError(f"the embedding has {embedding.num_embeddings} rows for a dictionary of "
                         f"{len(dictionary)} symbols")
    vectors = read_text_embeddings(path, dictionary, embedding.embedding_dim)
    with torch.no_grad():
        utils.load_embedding(vectors, dictionary, embedding)
    types = dictionary.symbols[dictionary.nspecial:]
    return EmbeddingCoverage(sum(word in vectors for word in types), len(types), path)
