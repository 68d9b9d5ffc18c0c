"""Moses tokenisation (sacremoses) as the data recipes apply it, shared by the recipes,
``fairseq-tree-parse --tokenize moses`` and ``fairseq-tree-translate``."""

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import regex

# Moses' remove-non-printing-char.perl replaces every \p{C} character by a space
# (sacremoses' own remove_control_chars deletes them instead, joining the words around them).
_NON_PRINTING = regex.compile(r"\p{C}")


@lru_cache(maxsize=None)
def _tools(lang: str):
    """sacremoses objects, built once per process and language."""
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    return MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang)


def moses_tokenize(text: str, lang: str, normalize: bool = False, aggressive: bool = False,
                   quote: bool = False) -> list[str]:
    """The tokens of one line after fairseq's prepare-*.sh Moses steps.

    ``quote``: ’ -> ' (what fairseq's recipes do to test sets); ``normalize``:
    normalize-punctuation.perl then remove-non-printing-char.perl (WMT training data);
    ``aggressive``: tokenizer.perl -a (WMT). Tokens are not XML-escaped (tokenizer.perl's default
    writes ' as &apos;): the source is parsed, and parsers and trees want the characters.
    """
    normalizer, tokenizer = _tools(lang)
    if quote:
        text = text.replace("\u2019", "'")
    if normalize:
        text = _NON_PRINTING.sub(" ", normalizer.normalize(text))
    return tokenizer.tokenize(text, aggressive_dash_splits=aggressive, escape=False,
                              return_str=True).split()


@dataclass(frozen=True)
class MosesSteps:
    """Which of ``moses_tokenize``'s steps a text goes through: the settings a recipe applies to
    a side (and records in recipe.json), and that inference repeats on raw input."""

    normalize: bool = False
    aggressive: bool = False
    quote: bool = False

    def tokenize(self, text: str, lang: str) -> list[str]:
        return moses_tokenize(text, lang, normalize=self.normalize, aggressive=self.aggressive,
                              quote=self.quote)


def build_tokenizer(method: str, lang: str, normalize: bool = False, aggressive: bool = False,
                    quote: bool = False) -> Callable[[str], list[str]]:
    """line -> tokens: ``none`` splits on whitespace (tokenised input), ``moses`` is
    ``moses_tokenize`` with these settings."""
    if method == "none":
        return str.split
    if method != "moses":
        raise ValueError(f"unknown tokenization {method!r}; choose none or moses")
    steps = MosesSteps(normalize, aggressive, quote)
    return lambda line: steps.tokenize(line, lang)
