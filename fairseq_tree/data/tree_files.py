"""The names of the files of binarized trees: the one owner of their suffixes.

fairseq-tree-preprocess writes a tree split as several mmap datasets beside one another, all
named from the split's stock fairseq prefix (``train.en-fr.en``; ``train`` with
``--only-source``), each a ``.bin``/``.idx`` pair:

    PREFIX               leaves + EOS (a stock fairseq token dataset)
    PREFIX.labels        node labels, in pre-order
    PREFIX.spans         node spans, [start, end) pairs
    PREFIX.node_targets  the class of every leaf and node (--node-targets)
    PREFIX.tags          the leaves' POS tags (--leaf-tags)
    PREFIX.heads         the leaves' dependency heads (--dependency-heads)

and, with ``--node-targets``, the class dictionary as ``dict.node_targets.txt`` beside
``dict.txt`` (``dict.{lang}.node_targets.txt`` with a language).
"""

from typing import Optional

LEAVES, LABELS, SPANS = "leaves", "labels", "spans"
NODE_TARGETS, TAGS, HEADS = "node_targets", "tags", "heads"
TREE_PARTS = (LEAVES, LABELS, SPANS)  # what every binarized tree has
LEAF_ANNOTATIONS = (TAGS, HEADS)  # what a tree has on request, one item per leaf

SUFFIXES = {LEAVES: "", LABELS: ".labels", SPANS: ".spans", NODE_TARGETS: ".node_targets",
            TAGS: ".tags", HEADS: ".heads"}


def tree_file(prefix: str, kind: str) -> str:
    """The dataset path (without ``.bin``/``.idx``) of one ``kind`` of the trees at ``prefix``."""
    return prefix + SUFFIXES[kind]


def node_targets_dictionary(lang: Optional[str] = None) -> str:
    """The file name of the class dictionary that ``--node-targets`` copies beside the trees'
    dictionary (``dict.txt``, or ``dict.{lang}.txt`` with a language)."""
    return f"dict.{lang}.node_targets.txt" if lang else "dict.node_targets.txt"
