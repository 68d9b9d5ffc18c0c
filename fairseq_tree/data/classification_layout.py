"""The data layout of the ``tree_classification`` task (fairseq's ``sentence_prediction``
layout, its inputs trees), made from one file per input and split: the library behind
``fairseq-tree-preprocess --task tree_classification``.

For each split prefix PREF (fairseq's ``--trainpref``/``--validpref``/``--testpref``, several
comma-separated) it reads

    PREF.input0         one bracketed tree per line (the examples)
    PREF.input1         the second trees of sentence pairs (optional: all splits or none)
    PREF.label          the example's label, one per line; with ``regression_target`` the K
                        numbers of its target (fairseq's regression layout)
    PREF.input0.SUFFIX  with ``dependency_heads``: the trees' CoNLL-U parses (PREF.input1.SUFFIX)

and writes, into DESTDIR,

    input0/  the trees, binarized as by fairseq-tree-preprocess --only-source (with node
             targets, leaf tags or dependency heads on request): dict.txt, {split}, ...
    input1/  the second trees, with input0's dictionary
    label/   the labels, binarized as by fairseq-preprocess --only-source (dict.txt: the class
             dictionary given, or, without one, built from the training labels in frequency
             order as fairseq's GLUE recipe builds it); with ``regression_target``
             {split}.label, copied as they are
"""

import dataclasses
import logging
import os
import shutil
from dataclasses import dataclass
from typing import List, Optional

from fairseq_tree.data.binarize import InputError
from fairseq_tree.data.preprocess import PreprocessOptions, preprocess, splits_of

logger = logging.getLogger(__name__)

INPUTS = ("input0", "input1")
LABEL = "label"


@dataclass
class ClassificationOptions:
    """What ``binarize_classification`` reads and how (flags of fairseq-tree-preprocess
    --task tree_classification under their names)."""

    destdir: str
    trainpref: Optional[str] = None
    validpref: Optional[str] = None  # several: comma-separated, as fairseq's
    testpref: Optional[str] = None
    input0: str = ".input0"  # the suffix of the first trees' files ("": PREF itself)
    pairs: Optional[bool] = None  # PREF.input1 too; None: when the first split has one
    label_dict: Optional[str] = None  # the classes in class order (None: from train labels)
    regression_target: bool = False  # labels are K numbers per line, copied as they are
    srcdict: Optional[str] = None  # the trees' dictionary (None: built from train's input0)
    node_targets: Optional[str] = None  # class dictionary of the trees' labels (targets)
    no_target_label: Optional[str] = None
    leaf_tags: bool = False
    dependency_heads: Optional[str] = None
    thresholdsrc: int = 0
    nwordssrc: int = -1
    padding_factor: int = 8
    workers: int = 1

    @classmethod
    def from_args(cls, args) -> "ClassificationOptions":
        """The options of a parsed fairseq-tree-preprocess --task tree_classification command
        line."""
        return cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls)
                      if hasattr(args, f.name)})

    def tree_file(self, pref: str, key: str) -> str:
        """The tree file of ``key`` (input0, input1) of the split at ``pref``."""
        return pref + (self.input0 if key == INPUTS[0] else f".{key}")

    def tree_options(self, key: str, srcdict: Optional[str]) -> PreprocessOptions:
        """fairseq-tree-preprocess --only-source of the ``key`` trees into DESTDIR/key."""
        prefs = {name: ",".join(self.tree_file(p, key) for p in pref.split(","))
                 if pref else None for name, pref in self.prefs().items()}
        return PreprocessOptions(
            os.path.join(self.destdir, key), **prefs, only_source=True, srcdict=srcdict,
            thresholdsrc=self.thresholdsrc, nwordssrc=self.nwordssrc,
            padding_factor=self.padding_factor, workers=self.workers,
            leaf_tags=self.leaf_tags, dependency_heads=self.dependency_heads,
            node_targets=self.node_targets if key == INPUTS[0] else None,
            no_target_label=self.no_target_label if key == INPUTS[0] else None)

    def prefs(self) -> dict:
        return {"trainpref": self.trainpref, "validpref": self.validpref,
                "testpref": self.testpref}


def has_pairs(options: ClassificationOptions) -> bool:
    """Whether the examples are pairs: ``options.pairs``, or else whether the first split has
    second trees."""
    if options.pairs is not None:
        return options.pairs
    splits = splits_of(options)
    return bool(splits) and os.path.isfile(options.tree_file(splits[0][1], INPUTS[1]))


def binarize_classification(options: ClassificationOptions) -> List[str]:
    """Write the ``tree_classification`` layout of the module docstring into
    ``options.destdir``; return the summary lines. Bad input raises ``InputError``."""
    splits = splits_of(options)
    for _, pref in splits:
        if not os.path.isfile(pref + ".label"):
            raise InputError(pref + ".label", None, "no such file")
    summary = preprocess(options.tree_options(INPUTS[0], options.srcdict))
    if has_pairs(options):
        input0_dict = os.path.join(options.destdir, INPUTS[0], "dict.txt")
        summary += [f"input1: {line}" for line in
                    preprocess(options.tree_options(INPUTS[1], input0_dict))]
    labels = os.path.join(options.destdir, LABEL)
    if options.regression_target:
        os.makedirs(labels, exist_ok=True)
        for name, pref in splits:
            shutil.copyfile(pref + ".label", os.path.join(labels, f"{name}.label"))
    else:
        binarize_labels(options, labels)
    how = "copied" if options.regression_target else "binarized"
    summary.append(f"label: {len(splits)} splits {how} into {labels}")
    logger.info(summary[-1])
    return summary


def binarize_labels(options: ClassificationOptions, destdir: str):
    """``PREF.label`` of every split by fairseq-preprocess --only-source (one worker)."""
    from fairseq import options as fairseq_options
    from fairseq_cli import preprocess as fairseq_preprocess

    prefs = [arg for flag, pref in options.prefs().items() if pref for arg in (
        f"--{flag}", ",".join(f"{p}.label" for p in pref.split(",")))]
    dictionary = ["--srcdict", options.label_dict] if options.label_dict else []
    fairseq_preprocess.main(fairseq_options.get_preprocessing_parser().parse_args(
        ["--only-source", *prefs, "--destdir", destdir, *dictionary, "--workers", "1"]))
