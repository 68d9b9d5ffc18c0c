"""Reading one bracketed tree given at inference (a hub's input, a line of fairseq-interactive):
the same parser as the training trees, its failure a reason the caller words for its user."""

from collections.abc import Callable

from fairseq_tree.trees.bracketed import TreeSyntaxError
from fairseq_tree.trees.normal_form import NormalTree, parse_tree
from fairseq_tree.trees.subwords import split_words


class InputTreeError(ValueError):
    """A bad inference input: ``index`` is its position in the lines given, ``reason`` says
    what is wrong."""

    def __init__(self, index: int, reason: str):
        self.index, self.reason = index, reason
        super().__init__(f"input {index}: {reason}")


def read_input_tree(line: str, index: int,
                    encode_fn: Callable[[str], str] | None = None) -> NormalTree:
    """One bracketed inference input (the ``index``-th), ``encode_fn`` (a word -> its pieces
    joined by spaces: BPE) applied to each leaf; ``InputTreeError`` when it is no tree."""
    try:
        tree = parse_tree(line)
    except TreeSyntaxError as err:
        raise InputTreeError(index, f"malformed tree: {err}") from None
    return split_words(tree, lambda word: encode_fn(word).split()) if encode_fn else tree
