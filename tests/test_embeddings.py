"""Loading GloVe-format text vectors into an embedding through a fairseq dictionary."""

import pytest
import torch
from fairseq.data import Dictionary
from torch import nn

from fairseq_tree.data.binarize import InputError
from fairseq_tree.data.embeddings import load_text_embeddings


def dictionary(*words):
    d = Dictionary()
    for word in words:
        d.add_symbol(word)
    return d


def embedding_for(d, dim=3):
    torch.manual_seed(0)
    return nn.Embedding(len(d), dim, padding_idx=d.pad())


GLOVE = "the 0.1 0.2 0.3\ndog -1 2.5 3e-2\nunused 9 9 9\n. . . 7 8 9\ndog 5 5 5\n"


def test_glove_vectors_fill_their_rows_and_coverage_is_reported(tmp_path):
    path = tmp_path / "glove.txt"
    path.write_text(GLOVE, encoding="utf-8")
    d = dictionary("the", "dog", "cat", ". . .")
    embedding = embedding_for(d)
    before = embedding.weight.detach().clone()
    coverage = load_text_embeddings(str(path), d, embedding)
    weight = embedding.weight.detach()
    assert weight[d.index("the")].tolist() == pytest.approx([0.1, 0.2, 0.3])  # the first line
    assert weight[d.index("dog")].tolist() == pytest.approx([-1, 2.5, 0.03])  # first of two
    assert weight[d.index(". . .")].tolist() == [7, 8, 9]  # a word holding spaces
    assert torch.equal(weight[d.index("cat")], before[d.index("cat")])
    assert (coverage.found, coverage.types) == (3, 4)
    assert str(coverage) == f"{path}: vectors for 3 of 4 dictionary types (75.00%)"


def test_word2vec_header_is_read(tmp_path):
    path = tmp_path / "w2v.txt"
    path.write_text("2 3\nthe 1 2 3\ndog 4 5 6\n", encoding="utf-8")
    d = dictionary("the", "dog")
    embedding = embedding_for(d)
    assert load_text_embeddings(str(path), d, embedding).found == 2
    assert embedding.weight[d.index("the")].tolist() == [1, 2, 3]


@pytest.mark.parametrize("text, message", [
    ("the 1 2 3 4\n", ":1: the vectors have 4 dimensions, the embedding 3"),
    ("2 5\nthe 1 2 3 4 5\n", ":1: the vectors have 5 dimensions, the embedding 3"),
    ("the 1 2 3\ndog 1 2\n", ":2: expected a word and 3 values"),
    ("the 1 2 3\ndog 1 x 2\n", ":2: not a number"),
])
def test_bad_vector_files_name_file_and_line(tmp_path, text, message):
    path = tmp_path / "bad.txt"
    path.write_text(text, encoding="utf-8")
    d = dictionary("the", "dog")
    with pytest.raises(InputError, match=f"^{path}{message}"):
        load_text_embeddings(str(path), d, embedding_for(d))


def test_missing_file_is_named(tmp_path):
    d = dictionary("the")
    with pytest.raises(InputError, match=f"^{tmp_path / 'none.txt'}: No such file"):
        load_text_embeddings(str(tmp_path / "none.txt"), d, embedding_for(d))
