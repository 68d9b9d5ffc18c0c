"""How many nodes the trees of a file have per leaf, and how many of them are flat."""

from pathlib import Path

from fairseq_tree.trees import Node, parse_tree


def tree_counts(trees: Path) -> dict:
    """Internal nodes (of the normal form: preterminals dropped, unary chains one node) per leaf
    of a file of trees, one a line, and the flat trees among them (one ``ROOT`` node over every
    leaf: in a file of words, a parser's fallback or ``--parser flat``)."""
    with open(trees, encoding="utf-8") as lines:
        normal = [parse_tree(line) for line in lines]
    leaves, nodes = sum(len(t.leaves) for t in normal), sum(len(t.nodes) for t in normal)
    flat = sum(t.nodes == [Node("ROOT", 0, len(t.leaves))] for t in normal)
    return {"file": str(trees), "sentences": len(normal), "leaves": leaves,
            "internal_nodes": nodes, "nodes_per_leaf": nodes / leaves, "flat_trees": flat}
