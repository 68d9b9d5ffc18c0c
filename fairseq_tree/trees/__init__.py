"""Pure-Python constituency trees: reading, normal form, subword splitting (no torch)."""

from fairseq_tree.trees.bracketed import (
    DOCUMENT_LABEL,
    Tree,
    TreeSyntaxError,
    format_bracketed,
    parse_bracketed,
    tree_leaves,
)
from fairseq_tree.trees.induction import INDUCED_LABEL, induce, induced_tree
from fairseq_tree.trees.inputs import InputTreeError, read_input_tree
from fairseq_tree.trees.normal_form import (
    Node,
    NormalTree,
    normalize,
    parse_tree,
    to_bracketed,
)
from fairseq_tree.trees.subwords import WORD_LABEL, first_pieces, join_subwords, split_words

__all__ = [
    "DOCUMENT_LABEL",
    "INDUCED_LABEL",
    "InputTreeError",
    "WORD_LABEL",
    "Node",
    "NormalTree",
    "Tree",
    "TreeSyntaxError",
    "first_pieces",
    "format_bracketed",
    "induce",
    "induced_tree",
    "join_subwords",
    "normalize",
    "parse_bracketed",
    "parse_tree",
    "read_input_tree",
    "split_words",
    "to_bracketed",
    "tree_leaves",
]
