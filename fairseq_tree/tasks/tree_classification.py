"""The ``tree_classification`` task: classify sentences or documents from their constituency
trees (Nguyen et al., ICLR 2020, Section 5.2), in the data layout of fairseq's
``sentence_prediction``.

    DIR/input0/  fairseq-tree-preprocess --only-source ...: dict.txt, {split} (leaves + EOS, a
                 stock token dataset), {split}.labels, {split}.spans; with --node-targets also
                 {split}.node_targets and dict.node_targets.txt (the classes)
    DIR/label/   fairseq-preprocess --only-source ...: dict.txt (the classes), {split}

One label per example (``label/``) trains with fairseq's ``sentence_prediction`` criterion; the
class of every leaf and node (``--node-targets``, the Stanford Sentiment Treebank) with
``node_classification``. ``--tree-input leaves-only`` is fairseq's ``sentence_prediction`` on the
leaves (the Transformer baseline: ``--arch roberta``, ``--init-token 0``).
"""

import contextlib
import logging
import os
from dataclasses import dataclass, field
from typing import Dict

import numpy as np
from fairseq.data import (
    Dictionary,
    IdDataset,
    NestedDictionaryDataset,
    NumelDataset,
    NumSamplesDataset,
    OffsetTokensDataset,
    RightPadDataset,
    SortDataset,
    StripTokenDataset,
    data_utils,
)
from fairseq.tasks import register_task
from fairseq.tasks.sentence_prediction import SentencePredictionConfig, SentencePredictionTask
from omegaconf import OmegaConf, open_dict

from fairseq_tree.data.classification_datasets import (
    CompleteSortDataset,
    PaddedSpansDataset,
    UnitTargetsDataset,
)
from fairseq_tree.tasks.tree_translation import TREE_INPUT_CHOICES

logger = logging.getLogger(__name__)


def task_error(message: str):
    """End the run with one line (no traceback): the input or the options are wrong."""
    raise SystemExit(f"tree_classification: error: {message}")


@dataclass
class TreeClassificationConfig(SentencePredictionConfig):
    tree_input: TREE_INPUT_CHOICES = field(
        default="tree",
        metadata={"help": "what the model reads of input0: the whole tree (leaves, node "
                  "labels, node spans), or only its leaves as a plain token sequence (fairseq's "
                  "sentence_prediction: the Transformer baseline)"},
    )
    # As fairseq's, read from the criterion's options, with a fallback: fairseq-validate builds
    # no criterion options, and a missing interpolation key would stop it.
    regression_target: bool = "${oc.select:criterion.regression_target,false}"
    classification_head_name: str = (
        "${oc.select:criterion.classification_head_name,sentence_classification_head}"
    )
    node_targets: bool = field(
        default=False,
        metadata={"help": "targets are the classes of every leaf and node (input0/{split}."
                  "node_targets, from fairseq-tree-preprocess --node-targets), not one label "
                  "per example; train with --criterion node_classification"},
    )


@register_task("tree_classification", dataclass=TreeClassificationConfig)
class TreeClassificationTask(SentencePredictionTask):
    """Sentence (or document) classification from trees binarized by fairseq-tree-preprocess.

    Batches carry ``src_tokens`` (right-padded leaves), ``src_lengths``, ``src_node_labels`` and
    ``src_node_spans`` (B x M x 2, padded nodes [0, 0)), and as target the class of each example
    (B) or, with ``--node-targets``, ``{"leaves": B x N, "nodes": B x M}`` classes (``NO_CLASS``
    where a unit has none). ``label_dictionary`` holds the classes, in class order.
    """

    cfg: TreeClassificationConfig

    @property
    def reads_trees(self) -> bool:
        return self.cfg.tree_input == "tree"

    @classmethod
    def setup_task(cls, cfg: TreeClassificationConfig, **kwargs):
        if cfg.regression_target:
            task_error("--regression-target is not supported by tree_classification")
        if cfg.node_targets and cfg.tree_input != "tree":
            task_error("--node-targets classifies the nodes of trees: use --tree-input tree")
        if cfg.init_token is not None and cfg.tree_input == "tree":
            task_error("--init-token prepends a token to the leaves of --tree-input leaves-only; "
                       "a tree is classified at its root")
        data_dict = cls.load_dictionary(cls.required_file(cfg.data, "input0", "dict.txt"))
        classes_path = (cls.required_file(cfg.data, "input0", "dict.node_targets.txt")
                        if cfg.node_targets else cls.required_file(cfg.data, "label", "dict.txt"))
        classes = Dictionary.load(classes_path)
        cls.check_num_classes(cfg, classes, classes_path)
        logger.info(f"[input] dictionary: {len(data_dict)} types; {cfg.num_classes} classes "
                    f"({' '.join(classes.symbols[classes.nspecial:])}) from {classes_path}")
        return cls(cfg, data_dict, classes)

    @staticmethod
    def required_file(data: str, *parts) -> str:
        path = os.path.join(data, *parts)
        if not os.path.isfile(path):
            hint = ("binarize the trees with fairseq-tree-preprocess --only-source --node-targets"
                    if parts[-1] == "dict.node_targets.txt" else
                    "binarize the trees with fairseq-tree-preprocess --only-source" if
                    parts[0] == "input0" else
                    "binarize one label per line with fairseq-preprocess --only-source "
                    "--srcdict CLASSES")
            task_error(f"{path}: missing ({hint})")
        return path

    @staticmethod
    def check_num_classes(cfg, classes: Dictionary, path: str):
        """``--num-classes`` must match the class dictionary; unset (-1), it is read from it."""
        found = len(classes) - classes.nspecial
        if cfg.num_classes == -1:
            with open_dict(cfg) if OmegaConf.is_config(cfg) else contextlib.ExitStack():
                cfg.num_classes = found
        elif cfg.num_classes != found:
            symbols = " ".join(classes.symbols[classes.nspecial:])
            task_error(f"--num-classes {cfg.num_classes} disagrees with {path}, which lists "
                       f"{found} classes ({symbols})")

    def load_dataset(self, split, combine=False, **kwargs):
        if not self.reads_trees:
            super().load_dataset(split, combine=combine, **kwargs)
            self.datasets[split] = CompleteSortDataset.from_dataset(self.datasets[split])
            return self.datasets[split]
        tree = self.load_tree_input("input0", split, combine)
        dataset = {
            "id": IdDataset(),
            "net_input": self.tree_net_input(tree),
            "target": self.load_targets(split, tree, combine),
            "nsentences": NumSamplesDataset(),
            "ntokens": NumelDataset(tree["leaves"], reduce=True),
        }
        sizes = tree["leaves"].sizes + tree["labels"].sizes  # what the encoder reads: n + 1 + m
        nested = NestedDictionaryDataset(dataset, sizes=[sizes])
        if not self.cfg.no_shuffle:
            with data_utils.numpy_seed(self.cfg.seed):
                nested = SortDataset(nested, sort_order=[np.random.permutation(len(nested))])
        self.datasets[split] = CompleteSortDataset.from_dataset(nested) if isinstance(
            nested, SortDataset) else nested
        logger.info(f"loaded {split}: {len(nested)} trees")
        return self.datasets[split]

    def load_tree_input(self, key: str, split: str, combine: bool) -> Dict:
        """The leaves, labels and spans (and node targets) of ``DIR/key/split``."""
        prefix = os.path.join(self.cfg.data, key, split)
        suffixes = {"leaves": "", "labels": ".labels", "spans": ".spans"}
        if self.cfg.node_targets:
            suffixes["unit_targets"] = ".node_targets"
        tree = {}
        for name, suffix in suffixes.items():
            dataset = data_utils.load_indexed_dataset(prefix + suffix, None, combine=combine)
            if dataset is None:
                task_error(f"{prefix + suffix}.{{bin,idx}}: missing (binarize with "
                           "fairseq-tree-preprocess --only-source"
                           + (" --node-targets)" if name == "unit_targets" else ")"))
            tree[name] = dataset
        self.check_tree_sizes(prefix, tree)
        return tree

    @staticmethod
    def check_tree_sizes(prefix: str, tree: Dict):
        """The parts of one binarization agree item by item (n + 1 leaves, m labels, 2m span
        ints, n + m unit targets); anything else is a mix of files from different runs."""
        leaves, labels, spans = tree["leaves"].sizes, tree["labels"].sizes, tree["spans"].sizes
        expected = {"labels": labels, "spans": 2 * labels}
        if "unit_targets" in tree:
            expected["unit_targets"] = leaves - 1 + labels
        for name, sizes in expected.items():
            actual = tree[name].sizes
            if len(actual) != len(leaves) or not np.array_equal(actual, sizes):
                task_error(f"{prefix}: the {name} do not match the {len(leaves)} trees "
                           "(files from different binarizations?)")

    def tree_net_input(self, tree: Dict) -> Dict:
        pad = self.source_dictionary.pad()
        return {
            "src_tokens": RightPadDataset(tree["leaves"], pad_idx=pad),
            "src_lengths": NumelDataset(tree["leaves"], reduce=False),
            "src_node_labels": RightPadDataset(tree["labels"], pad_idx=pad),
            "src_node_spans": PaddedSpansDataset(tree["spans"]),
        }

    def load_targets(self, split: str, tree: Dict, combine: bool):
        classes = self.label_dictionary
        if self.cfg.node_targets:
            num_leaves = tree["leaves"].sizes - 1
            return {part: UnitTargetsDataset(tree["unit_targets"], num_leaves, part,
                                             classes.pad(), classes.nspecial)
                    for part in ("leaves", "nodes")}
        path = os.path.join(self.cfg.data, "label", split)
        labels = data_utils.load_indexed_dataset(path, classes, combine=combine)
        if labels is None:
            task_error(f"{path}.{{bin,idx}}: missing (binarize one label per line with "
                       "fairseq-preprocess --only-source)")
        self.check_labels(path, labels, len(tree["leaves"]))
        return OffsetTokensDataset(StripTokenDataset(labels, id_to_strip=classes.eos()),
                                   offset=-classes.nspecial)

    def check_labels(self, path: str, labels, num_trees: int):
        """One label per tree, each a class of the label dictionary."""
        input0 = os.path.join(self.cfg.data, "input0", os.path.basename(path))
        if len(labels) != num_trees:
            task_error(f"{path}: {len(labels)} labels but {input0} has {num_trees} trees; "
                       "label and tree files must have the same number of lines")
        classes = self.label_dictionary
        for index in np.flatnonzero(labels.sizes != 2)[:1]:
            task_error(f"{path}: line {index + 1}: expected one label, found "
                       f"{labels.sizes[index] - 1}")
        for index in range(len(labels)):
            if labels[index][0] < classes.nspecial:
                task_error(f"{path}: line {index + 1}: the label is not a class of the label "
                           "dictionary (it was binarized as <unk>)")

    def build_model(self, cfg, from_checkpoint=False):
        if self.reads_trees:
            with open_dict(cfg) if OmegaConf.is_config(cfg) else contextlib.ExitStack():
                cfg.max_source_positions = self.cfg.max_positions
        model = super().build_model(cfg, from_checkpoint)
        if self.reads_trees and not getattr(model, "reads_trees", False):
            task_error(f"--arch {getattr(cfg, '_name', None) or getattr(cfg, 'arch', '?')} reads "
                       "token sequences, not trees: use a tree classifier (tree_classifier, "
                       "tree_classifier_tiny), or --tree-input leaves-only")
        return model
