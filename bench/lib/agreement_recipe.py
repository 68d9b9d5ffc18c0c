"""The agreement recipe (data-prep/prepare-agreement.sh's folder) as the agreement questions
read it: its label and meta lines, its folder, the majority classes of its training examples."""

import sys
from pathlib import Path

from fairseq_tree.trees.agreement import AGREEMENT_META

VIEW = "agreement"


def read_lines(path: Path) -> list[str]:
    if not path.is_file():
        sys.exit(f"agreement.py: error: {path}: no such file (run data-prep/prepare-agreement.sh)")
    return path.read_text(encoding="utf-8").splitlines()


def read_meta(path: Path) -> list[dict]:
    """The examples' .meta lines as dicts of ``AGREEMENT_META``."""
    rows = []
    for lineno, line in enumerate(read_lines(path), start=1):
        fields = line.split("\t")
        if len(fields) != len(AGREEMENT_META):
            sys.exit(f"agreement.py: error: {path}:{lineno}: {len(fields)} fields, expected "
                     f"{len(AGREEMENT_META)} ({', '.join(AGREEMENT_META)})")
        rows.append(dict(zip(AGREEMENT_META, fields)))
    return rows


def recipe_folder(data: Path) -> Path:
    """The recipe's folder (holding data-bin/agreement/), given it or the DATA folder above."""
    if not (data / "data-bin").is_dir() and (data / VIEW / "data-bin").is_dir():
        return data / VIEW  # DATA, as bench/sentiment.py takes it
    return data


def majority_classes(labels: list[str], meta: list[dict]) -> dict[str, str]:
    """The most frequent training label of each subject kind ("noun", "pronoun"), and over all
    examples (""): pronoun subjects are mostly plural (I, you, we, they take VBP), noun subjects
    mostly singular, so one majority for both would be a straw man."""
    kinds = {"": labels}
    for label, row in zip(labels, meta, strict=True):
        kinds.setdefault(row["subject_kind"], []).append(label)
    return {kind: max(sorted(set(values)), key=values.count) for kind, values in kinds.items()}
