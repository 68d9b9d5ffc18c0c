from fairseq_tree.data.label_dictionary import label_symbol
from fairseq_tree.data.linearized_tree import LinearizedTreeDataset
from fairseq_tree.data.tree_encoding import EncodedTree, encode_tree
from fairseq_tree.data.tree_language_pair_dataset import TreeLanguagePairDataset

__all__ = ["EncodedTree", "LinearizedTreeDataset", "TreeLanguagePairDataset", "encode_tree",
           "label_symbol"]
