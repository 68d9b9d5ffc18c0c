"""Real-valued targets of sentence pairs as distributions over integer scores (SICK-R).

Tai et al. (2015), Section 4.2, predict a relatedness score y in [1, K] as a distribution p-hat
over the integers 1..K and read the score as r^T p-hat, r = (1, ..., K); the target is the
sparse distribution p with p_floor(y) = floor(y) - y + 1 and p_floor(y)+1 = y - floor(y), so
that r^T p = y. The label files hold these distributions, K values per line, which is what
fairseq's ``sentence_prediction`` reads with ``--regression-target --num-classes K``; here they
are read with one-line errors instead of an assertion.
"""

import math
from typing import List

from fairseq_tree.data.binarize import InputError

TOLERANCE = 1e-4  # written distributions are rounded decimals


def sparse_distribution(score: float, num_classes: int) -> List[float]:
    """Tai et al. 2015, Section 4.2: the target distribution p over 1..K of a score y."""
    if not 1.0 <= score <= num_classes:
        raise ValueError(f"score {score} is outside [1, {num_classes}]")
    low = min(math.floor(score), num_classes - 1)
    target = [0.0] * num_classes
    target[low - 1] = low - score + 1
    target[low] = score - low
    return target


def parse_distribution(line: str, num_classes: int, path: str, lineno: int) -> List[float]:
    """K non-negative values summing to 1, or an ``InputError`` naming the line."""
    fields = line.split()
    if len(fields) != num_classes:
        raise InputError(path, lineno, f"expected {num_classes} values (a distribution over the "
                         f"scores 1..{num_classes}), found {len(fields)}")
    try:
        values = [float(field) for field in fields]
    except ValueError as err:
        raise InputError(path, lineno, f"not a number ({err})") from None
    if min(values) < 0 or abs(sum(values) - 1) > TOLERANCE:
        raise InputError(path, lineno, "not a distribution (values must be non-negative and sum "
                         "to 1; sparse_distribution writes a score's)")
    return values


def read_distributions(path: str, num_classes: int) -> List[List[float]]:
    """Every line of a label file as a distribution over 1..K."""
    with open(path, "rb") as handle:
        rows = []
        for lineno, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise InputError(path, lineno, f"not valid UTF-8 ({err.reason})") from None
            rows.append(parse_distribution(line, num_classes, path, lineno))
    return rows

