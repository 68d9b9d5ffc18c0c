"""Raw text to trees, by the steps a data recipe made its training trees with: tokenize (Moses,
a spaCy pipeline's own tokenizer, or whitespace), for documents split into sentences and cut
to their first words, then parse each sentence with a ``fairseq-tree-parse`` backend.

    text = RawTextParser(RawTextSteps("link-grammar", tokenize="moses", normalize=True), "en")
    text.parse(["The film is charming.", ""])   # ParseResults: a tree each, "" for no words

The inference hubs (``fairseq_tree.hub``, ``fairseq_tree.classification_hub``) read raw input
through it; ``document_sentences`` is also what ``data-prep/textprep.py`` tokenizes the
classification examples with, so the two cannot drift apart.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Dict, Optional, Union

from fairseq_tree.parsing import Parser, ParseResult, build_parser
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


@dataclass
class RawTextSteps:
    """How raw text becomes trees: the tokenization and the parser a recipe made its trees with
    (the text options of ``fairseq-tree-translate`` and ``fairseq-tree-classify``)."""

    parser: Optional[Union[str, Parser]] = None  # a fairseq-tree-parse backend; None: trees only
    parser_options: Dict = field(default_factory=dict)  # its build_parser options
    tokenize: str = "moses"  # none, moses, or spacy: the tokenizer of parser_options' spacy_model
    normalize: bool = False  # Moses punctuation normalization first
    aggressive: bool = False  # Moses -a
    quote: bool = False  # ’ -> ' first
    split_sentences: bool = False  # documents: one tree per pysbd sentence, under one root
    max_words: int = 0  # documents: the first whole sentences within N words (0: all)


class RawTextParser:
    """Raw text -> one ``ParseResult`` per text, as ``steps`` say: its tokens' tree (with
    ``split_sentences`` or ``max_words``, its sentences' trees on one line, which the tree reader
    puts under one root, as the recipes wrote IMDB's reviews). ``flat_fallbacks`` counts the
    sentences the parser could not parse."""

    def __init__(self, steps: RawTextSteps, lang: str):
        options = steps.parser_options
        self.steps = steps
        self.parser = build_parser(steps.parser, lang, **options) \
            if isinstance(steps.parser, str) else steps.parser
        self.tokenize = build_text_tokenizer(steps.tokenize, lang, steps.normalize,
                                             steps.aggressive, steps.quote,
                                             options.get("spacy_model"))
        self.flat_fallbacks = 0

    def sentences(self, text: str) -> list[list[str]]:
        """The tokens of each sentence of one text (one sentence unless it is a document)."""
        if not (self.steps.split_sentences or self.steps.max_words):
            return [self.tokenize(text)]
        sentences, _ = document_sentences([text], self.steps.split_sentences,
                                          self.steps.max_words, self.tokenize)
        return [sentence.split() for sentence in sentences] or [[]]

    def parse(self, texts: list[str]) -> list[ParseResult]:
        """One result per text: ``tree`` "" when it has no tokens; ``conllu`` (a dependency
        parser's) only for a text of one sentence."""
        sentences = [self.sentences(text) for text in texts]
        results = iter(self.parser.parse([tokens for text in sentences for tokens in text]))
        parsed = []
        for text in sentences:
            trees = [next(results) for _ in text]
            self.flat_fallbacks += sum(result.fallback is not None for result in trees)
            if len(trees) == 1:
                parsed.append(trees[0])
                continue
            fallbacks = [result.fallback for result in trees if result.fallback]
            parsed.append(ParseResult(" ".join(result.tree for result in trees),
                                      fallbacks[0] if fallbacks else None))
        return parsed
