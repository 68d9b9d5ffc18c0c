"""Class labels written on every node and word of a tree (the Stanford Sentiment Treebank's
``(3 (2 It) (4 (2 's) ...))``), turned into targets that never reach the model's input.

Every leaf and node of the normal form is a *unit*; units are ordered as the model reads them,
the n leaves first, then the m nodes in pre-order. A leaf's class is its preterminal label
(``(2 It)``: the word ``It`` of class 2), a node's class its label. Units the tree gives no class
(a bare token beside others, the pieces of a word split by BPE: the node over the pieces carries
the word's class) and units labelled with the ``no_target`` symbol get no target. The model's
input keeps the structure only: every node is given the one label ``NODE_INPUT_LABEL``.
"""

from dataclasses import dataclass
from typing import List, Optional, Tuple

from fairseq.data import Dictionary

from fairseq_tree.data.label_dictionary import class_index, class_symbols
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.trees.normal_form import Node, NormalTree

# The label every node of the model's input carries when the tree's labels are targets.
NODE_INPUT_LABEL = "NODE"


@dataclass
class NodeTargets:
    """The classes (a fairseq dictionary of class symbols, in class order) that labels name."""

    classes: Dictionary
    path: str  # where the class dictionary came from, for messages
    no_target: Optional[str] = None  # a label that means "this unit has no target"

    @property
    def num_classes(self) -> int:
        return len(class_symbols(self.classes))

    def class_of(self, label: Optional[str]) -> int:
        """Dictionary index of ``label``'s class; ``pad`` for a unit without target."""
        if label is None or label == self.no_target:
            return self.classes.pad()
        index = class_index(self.classes, label)
        if index is None:
            symbols = " ".join(class_symbols(self.classes))
            raise FairseqTreeError(f"label {label!r} is not a class of {self.path} (classes: {symbols})")
        return index + self.classes.nspecial

    def split(self, tree: NormalTree) -> Tuple[NormalTree, List[int]]:
        """The model's input tree (labels replaced, tags dropped) and the n + m unit targets."""
        targets = [self.class_of(tag) for tag in tree.tags]
        targets += [self.class_of(node.label) for node in tree.nodes]
        return input_structure(tree), targets


def input_structure(tree: NormalTree) -> NormalTree:
    """The model's input tree when labels are targets: its leaves and nodes, every node labelled
    ``NODE_INPUT_LABEL``, no tags (what inference gives a model trained on node targets)."""
    return NormalTree(list(tree.leaves), [None] * len(tree.leaves),
                      [Node(NODE_INPUT_LABEL, node.start, node.end) for node in tree.nodes])


def load_node_targets(path: str, no_target: Optional[str] = None) -> NodeTargets:
    """The class dictionary at ``path`` (a fairseq dictionary file, one class per line)."""
    classes = Dictionary.load(path)
    targets = NodeTargets(classes, path, no_target)
    if targets.num_classes < 1:
        raise FairseqTreeError(f"{path}: the class dictionary lists no class")
    if no_target is not None and no_target in classes.indices:
        raise FairseqTreeError(f"--no-target-label {no_target!r} is also a class of {path}")
    return targets
