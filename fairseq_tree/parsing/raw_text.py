"""Raw text to the tokens a data recipe parsed: Moses, a spaCy pipeline's own tokenizer, or
whitespace; documents split into sentences and cut to their first words.

``document_sentences`` is what ``data-prep/textprep.py`` tokenizes the classification examples
with and what the text pipeline (``fairseq_tree.inference.text``) reads raw input with, so the
two cannot drift apart.
"""

from collections.abc import Callable
from functools import lru_cache
from typing import Optional

from fairseq_tree.parsing.moses import build_tokenizer, moses_tokenize

Tokenizer = Callable[[str], list[str]]


@lru_cache(maxsize=None)
def sentence_splitter():
    """pysbd's English segmenter (the classification recipes split IMDB's reviews with it)."""
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def cut_document(sentences: list[str], max_words: int) -> tuple[list[str], bool]:
    """The first whole sentences of a document (tokenized) holding at most ``max_words`` words;
    a first sentence longer than that keeps its first ``max_words``. Also: was it cut?"""
    kept, words = [], 0
    for sentence in sentences:
        tokens = sentence.split()
        if words + len(tokens) > max_words:
            if not kept:
                kept.append(" ".join(tokens[:max_words]))
            return kept, True
        kept.append(sentence)
        words += len(tokens)
    return kept, False


def moses_normalized(text: str) -> list[str]:
    """The classification recipes' tokens: Moses with punctuation normalization (English)."""
    return moses_tokenize(text, "en", normalize=True)


def document_sentences(texts: list[str], split_sentences: bool = False, max_words: int = 0,
                       tokenize: Tokenizer = moses_normalized) -> tuple[list[str], bool]:
    """An example's tokenized sentences, tokens joined by spaces: with ``split_sentences`` its
    texts are paragraphs, split into sentences by pysbd first; sentences without tokens are
    dropped; the rest cut to ``max_words`` words (0: not cut). Also: was it cut?"""
    if split_sentences:
        texts = [s for text in texts for s in sentence_splitter().segment(text)]
    sentences = [" ".join(tokenize(text)) for text in texts]
    sentences = [s for s in sentences if s]
    if not max_words:
        return sentences, False
    return cut_document(sentences, max_words)


def build_text_tokenizer(method: str, lang: str, normalize: bool = False,
                         aggressive: bool = False, quote: bool = False,
                         spacy_model: Optional[str] = None) -> Tokenizer:
    """line -> tokens: ``moses`` / ``none`` (``moses.build_tokenizer``) or ``spacy``, the
    tokenizer of the pipeline ``spacy_model`` (the agreement recipe's words)."""
    if method != "spacy":
        return build_tokenizer(method, lang, normalize=normalize, aggressive=aggressive,
                               quote=quote)
    from fairseq_tree.parsing.spacy_backend import spacy_tokenizer

    return spacy_tokenizer(spacy_model, lang)
