"""How labels are spelled in fairseq dictionaries: the one owner of the label symbols.

Node labels and POS tags share the (joined) dictionary with words, written as ``[NP]``
(``label_symbol``) and read back with ``symbol_label``: the brackets keep the label ``S`` apart
from the word ``S``, and Moses tokenisation escapes ``[`` and ``]``, so no text token collides
with a wrapped label.

Classes (the label dictionaries of ``tree_classification``) are the symbols after the special
ones, in class order: class ``i`` is symbol ``nspecial + i`` (``class_index``).
``fairseq-preprocess --only-source`` without ``--srcdict`` (the label step of fairseq's RoBERTa
GLUE recipe) writes the classes in frequency order and pads the dictionary to a multiple of 8
entries with ``madeupword0000``, ``madeupword0001``, ... (``Dictionary.pad_to_multiple_``). The
padding comes last, so class ``i`` is symbol ``nspecial + i`` either way; it is not a class.
``write_classes`` writes a class dictionary in a chosen order.
"""

import os
import re
from typing import List, Optional, Sequence

from fairseq.data import Dictionary

PADDING_SYMBOL = re.compile(r"madeupword\d{4}")


def label_symbol(label: str) -> str:
    """Dictionary symbol of a node label or POS tag: ``NP`` -> ``[NP]``."""
    return f"[{label}]"


def symbol_label(symbol: str) -> Optional[str]:
    """The label that ``symbol`` spells (``[NP]`` -> ``NP``); None for a word or special symbol."""
    if len(symbol) > 2 and symbol[0] == "[" and symbol[-1] == "]":
        return symbol[1:-1]
    return None


def is_label_symbol(symbol: str) -> bool:
    """Whether ``symbol`` is a node label or POS tag (``label_symbol``), not a word."""
    return symbol_label(symbol) is not None


def class_symbols(classes: Dictionary) -> List[str]:
    """The class symbols in class order: the dictionary's symbols after the special ones, less
    the trailing run of fairseq's padding symbols."""
    symbols = classes.symbols[classes.nspecial:]
    while symbols and PADDING_SYMBOL.fullmatch(symbols[-1]):
        symbols = symbols[:-1]
    return symbols


def class_index(classes: Dictionary, symbol: str) -> Optional[int]:
    """The class (0, 1, ...) that ``symbol`` names; None when it is no class of ``classes``."""
    index = classes.indices.get(symbol, -1) - classes.nspecial
    return index if 0 <= index < len(class_symbols(classes)) else None


def write_classes(path: str, symbols: Sequence[str]):
    """A class dictionary in class order: ``symbols[k]`` is class k (lines ``SYMBOL 1``)."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as sink:
        sink.write("".join(f"{symbol} 1\n" for symbol in symbols))
