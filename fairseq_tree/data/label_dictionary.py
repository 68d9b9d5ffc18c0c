"""The classes of a label dictionary, as fairseq's ``sentence_prediction`` reads them.

``fairseq-preprocess --only-source`` without ``--srcdict`` (the label step of fairseq's RoBERTa
GLUE recipe) writes the classes in frequency order and pads the dictionary to a multiple of 8
entries with ``madeupword0000``, ``madeupword0001``, ... (``Dictionary.pad_to_multiple_``). The
padding comes last, so class ``i`` is symbol ``nspecial + i`` either way; it is not a class.
"""

import re
from typing import List

from fairseq.data import Dictionary

PADDING_SYMBOL = re.compile(r"madeupword\d{4}")


def class_symbols(classes: Dictionary) -> List[str]:
    """The class symbols in class order: the dictionary's symbols after the special ones, less
    the trailing run of fairseq's padding symbols."""
    symbols = classes.symbols[classes.nspecial:]
    while symbols and PADDING_SYMBOL.fullmatch(symbols[-1]):
        symbols = symbols[:-1]
    return symbols
