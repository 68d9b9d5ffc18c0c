"""The ``tree_classification`` task: classify sentences or documents from their constituency
trees (Nguyen et al., ICLR 2020, Section 5.2), in the data layout of fairseq's
``sentence_prediction``.

    DIR/input0/  fairseq-tree-preprocess --only-source ...: dict.txt, {split} (leaves + EOS, a
                 stock token dataset), {split}.labels, {split}.spans; with --node-targets also
                 {split}.node_targets and dict.node_targets.txt (the classes)
    DIR/input1/  the second trees of sentence pairs, binarized as input0 with
                 --srcdict input0/dict.txt (optional, as in fairseq)
    DIR/label/   fairseq-preprocess --only-source ...: dict.txt (the classes), {split}; or, with
                 --regression-target, {split}.label: K values per line (fairseq's layout)

One label per example (``label/``) trains with fairseq's ``sentence_prediction`` criterion; the
class of every leaf and node (``--node-targets``, the Stanford Sentiment Treebank) with
``node_classification``; a score as a distribution over 1..K (SICK-R, ``score_targets``) with
``score_distribution``. ``--tree-input leaves-only`` is fairseq's ``sentence_prediction`` on the
leaves (the Transformer baseline: ``--arch roberta``, ``--init-token 0``; pairs joined with
``--separator-token``). Encoders that read more than the tree (POS tags, dependency heads: see
``TreeClassifierModel.leaf_annotations``) get ``{split}.tags`` / ``{split}.heads`` of input0
and input1 (fairseq-tree-preprocess --leaf-tags / --dependency-heads).
"""

import contextlib
import logging
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np
import torch
from fairseq.data import (
    ConcatSentencesDataset,
    Dictionary,
    IdDataset,
    NestedDictionaryDataset,
    RawLabelDataset,
    NumelDataset,
    NumSamplesDataset,
    OffsetTokensDataset,
    RightPadDataset,
    SortDataset,
    StripTokenDataset,
    data_utils,
)
from fairseq.dataclass import ChoiceEnum
from fairseq.tasks import register_task
from fairseq.tasks.sentence_prediction import SentencePredictionConfig, SentencePredictionTask
from omegaconf import OmegaConf, open_dict

from fairseq_tree.data.binarize import InputError
from fairseq_tree.data.classification_datasets import (
    CompleteSortDataset,
    LeafHeadsDataset,
    PaddedSpansDataset,
    UnitTargetsDataset,
    in_memory,
    sentence_prediction_tokens,
)
from fairseq_tree.data.label_dictionary import class_symbols
from fairseq_tree.data.node_targets import input_structure
from fairseq_tree.data.score_targets import read_distributions
from fairseq_tree.data.tree_encoding import encode_tree
from fairseq_tree.data.tree_files import (
    HEADS,
    LABELS,
    LEAVES,
    NODE_TARGETS,
    SPANS,
    TAGS,
    TREE_PARTS,
    node_targets_dictionary,
    tree_file,
)
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.trees.normal_form import NormalTree

logger = logging.getLogger(__name__)

# Not tree_translation's choices: a linearized tree is no input of this task (yet).
TREE_INPUT_CHOICES = ChoiceEnum(["tree", "leaves-only"])


def task_error(message: str):
    """The input or the options are wrong: one line, which the command line prints as is."""
    raise FairseqTreeError(f"tree_classification: error: {message}")


LEAF_ANNOTATIONS_HELP = ("the per-leaf data the model reads besides the tree: tags, heads, "
                         "comma-separated, '?' after an optional one (set when the model is built)")


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
    # Settings of the model, written when the task builds it (from --arch and the model's
    # options, ``TreeClassifierModel.leaf_annotations``) and kept with the checkpoint: what
    # load_dataset loads besides the trees, and the model named in its errors.
    leaf_annotations: str = field(default="", metadata={"help": LEAF_ANNOTATIONS_HELP})
    model_arch: str = field(default="", metadata={"help": "the model's --arch (set when built)"})


def format_annotations(annotations: Dict[str, bool]) -> str:
    """``{"tags": False, "heads": True}`` -> ``"tags?,heads"`` (``leaf_annotations``)."""
    return ",".join(name + ("" if required else "?") for name, required in annotations.items())


def parse_annotations(spec: str) -> Dict[str, bool]:
    """``format_annotations``' inverse."""
    return {name.rstrip("?"): not name.endswith("?") for name in spec.split(",") if name}


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
        cls.check_options(cfg)
        data_dict = cls.load_dictionary(cls.required_file(cfg.data, "input0", "dict.txt"))
        cls.check_pairs(cfg.data, cfg.node_targets)
        if cfg.regression_target:
            logger.info(f"[input] dictionary: {len(data_dict)} types; targets: "
                        f"{cfg.num_classes} values per example")
            return cls(cfg, data_dict, data_dict)  # as fairseq: no class dictionary
        classes_path = (cls.required_file(cfg.data, "input0", node_targets_dictionary())
                        if cfg.node_targets else cls.required_file(cfg.data, "label", "dict.txt"))
        classes = Dictionary.load(classes_path)
        cls.check_num_classes(cfg, classes, classes_path)
        logger.info(f"[input] dictionary: {len(data_dict)} types; {cfg.num_classes} classes "
                    f"({' '.join(class_symbols(classes))}) from {classes_path}")
        return cls(cfg, data_dict, classes)

    @staticmethod
    def check_options(cfg: TreeClassificationConfig):
        if cfg.node_targets and cfg.tree_input != "tree":
            task_error("--node-targets classifies the nodes of trees: use --tree-input tree")
        if cfg.node_targets and cfg.regression_target:
            task_error("--node-targets classifies every node; it takes no --regression-target")
        if cfg.regression_target and cfg.num_classes < 1:
            task_error("--regression-target needs --num-classes (the values per label line)")
        if cfg.init_token is not None and cfg.tree_input == "tree":
            task_error("--init-token prepends a token to the leaves of --tree-input leaves-only; "
                       "a tree is classified at its root")

    @staticmethod
    def check_pairs(data: str, node_targets: bool):
        """input1 must be binarized with input0's dictionary, or its ids mean other words; pairs
        have no per-node targets."""
        if node_targets and os.path.isdir(os.path.join(data, "input1")):
            task_error("--node-targets classifies the nodes of one tree: not sentence pairs "
                       f"({os.path.join(data, 'input1')})")
        first, second = (os.path.join(data, key, "dict.txt") for key in ("input0", "input1"))
        if os.path.isfile(second) and Dictionary.load(second).symbols != \
                Dictionary.load(first).symbols:
            task_error(f"{second} differs from {first}: binarize input1 with --srcdict {first}")

    @property
    def sentence_pairs(self) -> bool:
        return os.path.isdir(os.path.join(self.cfg.data, "input1"))

    @staticmethod
    def required_file(data: str, *parts) -> str:
        path = os.path.join(data, *parts)
        if not os.path.isfile(path):
            hint = ("binarize the trees with fairseq-tree-preprocess --only-source --node-targets"
                    if parts[-1] == node_targets_dictionary() else
                    "binarize the trees with fairseq-tree-preprocess --only-source" if
                    parts[0] == "input0" else
                    "binarize one label per line with fairseq-preprocess --only-source "
                    "--srcdict CLASSES")
            task_error(f"{path}: missing ({hint})")
        return path

    @staticmethod
    def check_num_classes(cfg, classes: Dictionary, path: str):
        """``--num-classes`` must cover the classes of the class dictionary (fairseq's padding
        symbols are none); unset (-1), it is read from it. More outputs than classes is what
        fairseq's ``sentence_prediction`` allows too (a class missing from the training data)."""
        symbols = class_symbols(classes)
        if cfg.num_classes == -1:
            with open_dict(cfg) if OmegaConf.is_config(cfg) else contextlib.ExitStack():
                cfg.num_classes = len(symbols)
        elif cfg.num_classes < len(symbols):
            task_error(f"--num-classes {cfg.num_classes} disagrees with {path}, which lists "
                       f"{len(symbols)} classes ({' '.join(symbols)})")
        elif cfg.num_classes > len(symbols):
            logger.warning(f"--num-classes {cfg.num_classes}, but {path} lists "
                           f"{len(symbols)} classes ({' '.join(symbols)}): the other outputs "
                           "are never a target")

    def load_dataset(self, split, combine=False, **kwargs):
        if not self.reads_trees:
            if self.cfg.regression_target:  # checked here: fairseq's reader only asserts
                leaves = data_utils.load_indexed_dataset(
                    os.path.join(self.cfg.data, "input0", split), None, combine=combine)
                self.load_score_targets(split, len(leaves) if leaves is not None else 0)
            super().load_dataset(split, combine=combine, **kwargs)
            self.datasets[split] = CompleteSortDataset.from_dataset(self.datasets[split])
            return self.datasets[split]
        tree = self.load_tree_input("input0", split, combine)
        net_input, sizes = self.tree_net_input(tree), tree["leaves"].sizes + tree["labels"].sizes
        ntokens = NumelDataset(tree["leaves"], reduce=True)
        if self.sentence_pairs:
            pair = self.load_tree_input("input1", split, combine, num_trees=len(tree["leaves"]))
            net_input["input1"] = self.tree_net_input(pair)
            sizes = sizes + pair["leaves"].sizes + pair["labels"].sizes
            ntokens = NumelDataset(ConcatSentencesDataset(tree["leaves"], pair["leaves"]), True)
        dataset = {
            "id": IdDataset(),
            "net_input": net_input,
            "target": self.load_targets(split, tree, combine),
            "nsentences": NumSamplesDataset(),
            "ntokens": ntokens,
        }
        nested = NestedDictionaryDataset(dataset, sizes=[sizes])  # what the encoder reads
        if not self.cfg.no_shuffle:
            with data_utils.numpy_seed(self.cfg.seed):
                nested = SortDataset(nested, sort_order=[np.random.permutation(len(nested))])
        self.datasets[split] = CompleteSortDataset.from_dataset(nested) if isinstance(
            nested, SortDataset) else nested
        logger.info(f"loaded {split}: {len(nested)} {'pairs' if self.sentence_pairs else 'trees'}")
        return self.datasets[split]

    def load_tree_input(self, key: str, split: str, combine: bool,
                        num_trees: Optional[int] = None) -> Dict:
        """The leaves, labels and spans (and node targets, and the per-leaf datasets the model
        reads) of ``DIR/key/split``; with ``num_trees``, it must hold that many trees."""
        prefix = os.path.join(self.cfg.data, key, split)
        tree = {}
        for kind in TREE_PARTS + ((NODE_TARGETS,) if self.cfg.node_targets else ()):
            path = tree_file(prefix, kind)
            dataset = data_utils.load_indexed_dataset(path, None, combine=combine)
            if dataset is None:
                task_error(f"{path}.{{bin,idx}}: missing (binarize with "
                           "fairseq-tree-preprocess --only-source"
                           + (" --node-targets)" if kind == NODE_TARGETS else ")"))
            tree[kind] = dataset
        tree.update(self.load_leaf_annotations(prefix, combine))
        self.check_tree_sizes(prefix, tree)
        if num_trees is not None and len(tree["leaves"]) != num_trees:
            task_error(f"{prefix}: {len(tree['leaves'])} trees but input0 has {num_trees}; the "
                       "two sides of sentence pairs must have the same number of lines")
        return tree

    def load_leaf_annotations(self, prefix: str, combine: bool) -> Dict:
        """``{prefix}.tags`` / ``.heads`` where the model reads them (``leaf_annotations``,
        known once the model is built): a missing required one stops the run."""
        found = {}
        for name, required in self.leaf_annotations.items():
            path = tree_file(prefix, name)
            dataset = data_utils.load_indexed_dataset(path, None, combine=combine)
            if dataset is not None:
                found[name] = dataset
            elif required:
                task_error(f"{path}.{{bin,idx}}: missing: {self.model_name} reads the leaves' "
                           f"{ANNOTATION_FLAGS[name][0]} (binarize with fairseq-tree-preprocess "
                           f"{ANNOTATION_FLAGS[name][1]})")
            elif not self.cfg.node_targets:  # node targets: the word labels are classes
                logger.warning(f"{path}.{{bin,idx}}: missing; {self.model_name} reads the leaves "
                               f"without {ANNOTATION_FLAGS[name][0]} ({ANNOTATION_FLAGS[name][1]})")
        return found

    @staticmethod
    def check_tree_sizes(prefix: str, tree: Dict):
        """The parts of one binarization agree item by item (n + 1 leaves, m labels, 2m span
        ints, n + m unit targets, n + 1 tags, n heads); anything else is a mix of files from
        different runs."""
        leaves, labels = tree["leaves"].sizes, tree["labels"].sizes
        expected = {LABELS: labels, SPANS: 2 * labels, NODE_TARGETS: leaves - 1 + labels,
                    TAGS: leaves, HEADS: leaves - 1}
        for name, sizes in expected.items():
            if name not in tree:
                continue
            actual = tree[name].sizes
            if len(actual) != len(leaves) or not np.array_equal(actual, sizes):
                task_error(f"{prefix}: the {name} do not match the {len(leaves)} trees "
                           "(files from different binarizations?)")

    def tree_net_input(self, tree: Dict) -> Dict:
        pad = self.source_dictionary.pad()
        net_input = {
            "src_tokens": RightPadDataset(tree["leaves"], pad_idx=pad),
            "src_lengths": NumelDataset(tree["leaves"], reduce=False),
            "src_node_labels": RightPadDataset(tree["labels"], pad_idx=pad),
            "src_node_spans": PaddedSpansDataset(tree["spans"]),
        }
        if "tags" in tree:
            net_input["src_leaf_tags"] = RightPadDataset(tree["tags"], pad_idx=pad)
        if "heads" in tree:
            net_input["src_heads"] = LeafHeadsDataset(tree["heads"])
        return net_input

    def load_targets(self, split: str, tree: Dict, combine: bool):
        classes = self.label_dictionary
        if self.cfg.node_targets:
            num_leaves = tree["leaves"].sizes - 1
            return {part: UnitTargetsDataset(tree[NODE_TARGETS], num_leaves, part,
                                             classes.pad(), classes.nspecial)
                    for part in ("leaves", "nodes")}
        if self.cfg.regression_target:
            return self.load_score_targets(split, len(tree["leaves"]))
        path = os.path.join(self.cfg.data, "label", split)
        labels = data_utils.load_indexed_dataset(path, classes, combine=combine)
        if labels is None:
            task_error(f"{path}.{{bin,idx}}: missing (binarize one label per line with "
                       "fairseq-preprocess --only-source)")
        self.check_labels(path, labels, len(tree["leaves"]))
        return OffsetTokensDataset(StripTokenDataset(labels, id_to_strip=classes.eos()),
                                   offset=-classes.nspecial)

    def load_score_targets(self, split: str, num_trees: int) -> RawLabelDataset:
        """``label/{split}.label``: K values per line (fairseq's regression layout); K > 1
        values are a distribution over the scores 1..K (``score_targets``)."""
        path = os.path.join(self.cfg.data, "label", f"{split}.label")
        if not os.path.isfile(path):
            task_error(f"{path}: missing (one target per line: {self.cfg.num_classes} values)")
        try:
            if self.cfg.num_classes > 1:
                rows = read_distributions(path, self.cfg.num_classes)
            else:
                with open(path, encoding="utf-8") as lines:
                    rows = [parse_score(line, path, k) for k, line in enumerate(lines, 1)]
        except InputError as err:
            task_error(str(err))
        if len(rows) != num_trees:
            task_error(f"{path}: {len(rows)} targets but input0/{split} has {num_trees} trees; "
                       "label and tree files must have the same number of lines")
        return RawLabelDataset(rows)

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
            label = int(labels[index][0])
            if label < classes.nspecial:
                task_error(f"{path}: line {index + 1}: the label is not a class of the label "
                           "dictionary (it was binarized as <unk>)")
            if label - classes.nspecial >= self.cfg.num_classes:
                task_error(f"{path}: line {index + 1}: the label {classes[label]!r} is not one "
                           f"of the {self.cfg.num_classes} classes (--num-classes)")

    @property
    def leaf_annotations(self) -> Dict[str, bool]:
        return parse_annotations(self.cfg.leaf_annotations)

    @property
    def model_name(self) -> str:
        return f"--arch {self.cfg.model_arch or '?'}"

    def build_model(self, cfg, from_checkpoint=False):
        if self.reads_trees:
            with open_dict(cfg) if OmegaConf.is_config(cfg) else contextlib.ExitStack():
                cfg.max_source_positions = self.cfg.max_positions
                if from_checkpoint and getattr(cfg, "embeddings", None):
                    cfg.embeddings = None  # the checkpoint holds the trained vectors
        self.cfg.model_arch = getattr(cfg, "_name", None) or getattr(cfg, "arch", None) or "?"
        model = super().build_model(cfg, from_checkpoint)
        if self.reads_trees and not getattr(model, "reads_trees", False):
            task_error(f"{self.model_name} reads token sequences, not trees: use a tree "
                       "classifier (tree_classifier, tree_classifier_tiny), or --tree-input "
                       "leaves-only")
        if not self.reads_trees and getattr(model, "reads_trees", False):
            task_error(f"{self.model_name} reads trees, and --tree-input {self.cfg.tree_input} "
                       "gives it the leaves alone: use --tree-input tree with it, or train a "
                       "sequence classifier on the leaves (fairseq's roberta: --arch roberta "
                       "--init-token 0)")
        if self.reads_trees:
            self.cfg.leaf_annotations = format_annotations(model.leaf_annotations())
            if self.sentence_pairs:
                model.register_classification_head(self.cfg.classification_head_name,
                                                   self.cfg.num_classes, sentence_pair=True)
        return model

    # ------------------------------------------------------------------------------ inference

    def inference_input(self, tree: NormalTree, heads: Optional[List[int]] = None) -> Dict:
        """One input tree (its leaves the model's pieces: BPE applied) as the items
        ``load_tree_input`` reads of a binarized one: leaves (EOS last), labels, spans (2m,
        flat), and the per-leaf data the model reads: POS tags (where the model needs them or
        its data has them) and ``heads`` (one per leaf, 0-based, -1 at the root)."""
        if self.cfg.node_targets:
            tree = input_structure(tree)  # the labels were targets: the model saw none
        encoded = encode_tree(tree, self.source_dictionary)
        item = {LEAVES: encoded.leaves, LABELS: encoded.labels, SPANS: encoded.spans.view(-1)}
        annotations = self.leaf_annotations
        if annotations.get(TAGS) or TAGS in annotations and self.binarized_with(TAGS):
            item[TAGS] = encoded.tags
        if heads is not None and HEADS in annotations:
            item[HEADS] = torch.tensor(heads, dtype=torch.long)
        elif annotations.get(HEADS):
            task_error(f"{self.model_name} reads the leaves' dependency heads: none given")
        return item

    def binarized_with(self, annotation: str) -> bool:
        """Whether the training trees were binarized with ``annotation`` (tags, heads): what
        the model read when it was trained."""
        return os.path.exists(tree_file(os.path.join(self.cfg.data, "input0", "train"),
                                        annotation) + ".idx")

    def inference_dataset(self, examples: List[List[Dict]]) -> NestedDictionaryDataset:
        """``load_dataset``'s batches of in-memory examples, in order and without targets: each
        example its ``inference_input``s (two for sentence pairs)."""
        sides = [list(side) for side in zip(*examples)]
        if not self.reads_trees:
            src_tokens = sentence_prediction_tokens(
                *[[item[LEAVES] for item in side] for side in sides],
                init_token=self.cfg.init_token, separator_token=self.cfg.separator_token)
            net_input = {"src_tokens": RightPadDataset(src_tokens, self.source_dictionary.pad()),
                         "src_lengths": NumelDataset(src_tokens, reduce=False)}
            sizes = src_tokens.sizes
        else:
            trees = [{kind: in_memory([item[kind] for item in side]) for kind in side[0]}
                     for side in sides]
            net_input = self.tree_net_input(trees[0])
            if len(trees) > 1:
                net_input["input1"] = self.tree_net_input(trees[1])
            sizes = sum(tree[LEAVES].sizes + tree[LABELS].sizes for tree in trees)
        return NestedDictionaryDataset({"id": IdDataset(), "net_input": net_input},
                                       sizes=[sizes])


def parse_score(line: str, path: str, lineno: int) -> List[float]:
    """One real-valued target per line (``--num-classes 1``)."""
    try:
        return [float(line)]
    except ValueError:
        raise InputError(path, lineno, f"expected one number, found {line.strip()!r}") from None


# The per-leaf datasets: what they hold, and the fairseq-tree-preprocess option that writes them.
ANNOTATION_FLAGS = {TAGS: ("POS tags", "--leaf-tags"),
                    HEADS: ("dependency heads", "--dependency-heads SUFFIX")}
