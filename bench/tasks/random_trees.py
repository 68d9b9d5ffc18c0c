"""Random nested spans over n leaves: the trees of the speed benchmarks, whose cost depends on
the tree's shape and size, not on its words."""

import random


def random_tree_spans(rng: random.Random, n: int, m: int) -> list:
    """m distinct nested spans over n leaves: a random binary tree (n - 1 nodes) with nodes
    dropped at random (a subset of a nested family stays nested), the root kept."""
    spans, stack = [], [(0, n)]
    while stack:
        start, end = stack.pop()
        if end - start < 2:
            continue
        spans.append((start, end))
        cut = rng.randint(start + 1, end - 1)
        stack += [(start, cut), (cut, end)]
    root, rest = spans[0], spans[1:]
    rng.shuffle(rest)
    return [root] + rest[: max(0, m - 1)]
