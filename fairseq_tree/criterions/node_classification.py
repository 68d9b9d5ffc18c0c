"""The ``node_classification`` criterion: a loss on the class of every leaf and node, accuracy at
the root (Nguyen et al., ICLR 2020, Appendix 7.4: on SST "we optimize every sentiment label")."""

import math
from dataclasses import dataclass, field
from typing import Optional

import torch
import torch.nn.functional as F
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass
from fairseq.logging import metrics
from torch import Tensor

from fairseq_tree.data.classification_datasets import NO_CLASS
from fairseq_tree.data.label_dictionary import class_index, class_symbols
from fairseq_tree.errors import FairseqTreeError


@dataclass
class NodeClassificationConfig(FairseqDataclass):
    classification_head_name: str = field(
        default="sentence_classification_head",
        metadata={"help": "name of the classification head to use"},
    )
    regression_target: bool = field(
        default=False, metadata={"help": "not supported: the targets are classes"}
    )
    class_groups: Optional[str] = field(
        default=None,
        metadata={"help": "root accuracy over groups of classes, e.g. '0,1/3,4' for SST-2 from "
                  "a 5-class model: the predicted group is the one with the most probability "
                  "(p0+p1 vs p3+p4); roots whose class is in no group are not counted"},
    )


def parse_class_groups(spec: Optional[str], classes) -> Optional[Tensor]:
    """``"0,1/3,4"`` -> the group of each class index (-1: in no group), from class symbols."""
    if not spec:
        return None
    num_classes = len(class_symbols(classes))
    group_of = torch.full((num_classes,), -1, dtype=torch.long)
    for group, members in enumerate(spec.split("/")):
        for symbol in members.split(","):
            index = class_index(classes, symbol.strip())
            if index is None:
                raise FairseqTreeError(f"node_classification: error: --class-groups {spec}: "
                                 f"{symbol!r} is not a class")
            if group_of[index] >= 0:
                raise FairseqTreeError(f"node_classification: error: --class-groups {spec}: "
                                 f"{symbol!r} is in two groups")
            group_of[index] = group
    return group_of


def root_accuracy(lprobs: Tensor, targets: Tensor, group_of: Optional[Tensor]):
    """Correct and counted roots: B x classes log-probabilities against B classes (NO_CLASS
    roots are not counted); with ``group_of``, probabilities are summed within groups first."""
    if group_of is None:
        counted = targets.ne(NO_CLASS)
        correct = lprobs.argmax(-1).eq(targets) & counted
        return correct.sum(), counted.sum()
    group_of = group_of.to(targets.device)
    in_group = group_of >= 0
    num_groups = int(group_of.max()) + 1
    group_probs = lprobs.new_zeros(lprobs.size(0), num_groups)
    group_probs.index_add_(1, group_of[in_group], lprobs.exp()[:, in_group])
    target_groups = torch.where(targets.eq(NO_CLASS), -1, group_of[targets.clamp(min=0)])
    counted = target_groups >= 0
    correct = group_probs.argmax(-1).eq(target_groups) & counted
    return correct.sum(), counted.sum()


@register_criterion("node_classification", dataclass=NodeClassificationConfig)
class NodeClassificationCriterion(FairseqCriterion):
    """Negative log-likelihood of the class of every leaf and node that has one (averaged over
    them), the root's accuracy (``accuracy``) and every unit's (``unit_accuracy``)."""

    def __init__(self, cfg: NodeClassificationConfig, task):
        super().__init__(task)
        if cfg.regression_target:
            raise FairseqTreeError("node_classification: error: --regression-target is not supported")
        if not getattr(task.cfg, "node_targets", False):
            raise FairseqTreeError("node_classification: error: needs --task tree_classification "
                             "--node-targets (the class of every node); one label per example "
                             "trains with --criterion sentence_prediction")
        self.head_name = cfg.classification_head_name
        self.group_of = parse_class_groups(cfg.class_groups, task.label_dictionary)

    def forward(self, model, sample, reduce=True):
        logits, extra = model(**sample["net_input"], features_only=True,
                              classification_head_name=self.head_name, every_unit=True)
        targets = torch.cat([sample["target"]["leaves"], sample["target"]["nodes"]], dim=1)
        lprobs = F.log_softmax(logits, dim=-1, dtype=torch.float32)  # B x (N+M) x classes
        loss = F.nll_loss(lprobs.flatten(0, 1), targets.flatten(), ignore_index=NO_CLASS,
                          reduction="sum")
        labelled = targets.ne(NO_CLASS)
        rows = torch.arange(targets.size(0), device=targets.device)
        roots = extra["root_columns"]
        correct, counted = root_accuracy(lprobs[rows, roots], targets[rows, roots], self.group_of)
        sample_size = int(labelled.sum())
        logging_output = {
            "loss": loss.data, "ntokens": sample["ntokens"], "nsentences": targets.size(0),
            "sample_size": sample_size, "ncorrect": correct.data, "nroots": counted.data,
            "units_correct": (lprobs.argmax(-1).eq(targets) & labelled).sum().data,
        }
        return loss, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        def total(key):
            return sum(log.get(key, 0) for log in logging_outputs)

        loss, sample_size = total("loss"), total("sample_size")
        metrics.log_scalar("loss", loss / max(sample_size, 1) / math.log(2), sample_size, round=3)
        nroots = total("nroots")
        if nroots > 0:
            metrics.log_scalar("accuracy", 100.0 * total("ncorrect") / nroots, nroots, round=2)
        if sample_size > 0:
            metrics.log_scalar("unit_accuracy", 100.0 * total("units_correct") / sample_size,
                               sample_size, round=2)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
