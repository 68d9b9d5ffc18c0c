"""The ``score_distribution`` criterion: a real-valued score (SICK-R's relatedness) predicted as a
distribution over the integer scores 1..K, as Tai et al. (2015), Section 4.2, and Ahmed et al.
(2019) train it: the loss is KL(p || p-hat) against the sparse target distribution p
(``fairseq_tree.data.score_targets``), the predicted score r^T p-hat, reported as mean squared
error, Pearson's r and Spearman's rho against the gold score r^T p."""

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.criterions.sentence_prediction import pearson_and_spearman
from fairseq.dataclass import FairseqDataclass
from fairseq.logging import metrics
from torch import Tensor

from fairseq_tree.errors import FairseqTreeError


@dataclass
class ScoreDistributionConfig(FairseqDataclass):
    classification_head_name: str = field(
        default="sentence_classification_head",
        metadata={"help": "name of the classification head to use"},
    )
    # Read by the task (as fairseq's sentence_prediction reads its criterion's): the targets are
    # real-valued, K values per line of label/{split}.label.
    regression_target: bool = field(
        default=True, metadata={"help": "always on: the targets are distributions over 1..K"}
    )


def expected_score(probs: Tensor) -> Tensor:
    """Tai et al. 2015, Section 4.2: y-hat = r^T p-hat with r = (1, ..., K); B x K -> B."""
    scores = torch.arange(1, probs.size(-1) + 1, dtype=probs.dtype, device=probs.device)
    return probs @ scores


@register_criterion("score_distribution", dataclass=ScoreDistributionConfig)
class ScoreDistributionCriterion(FairseqCriterion):
    """Sum over examples of KL(p || p-hat) (Tai et al. 2015, Section 4.2, without the L2 term:
    fairseq's --weight-decay is that); ``mse`` of the expected scores at every step, ``pearson``
    and ``spearman`` on evaluation."""

    def __init__(self, cfg: ScoreDistributionConfig, task):
        super().__init__(task)
        if not cfg.regression_target:
            raise FairseqTreeError("score_distribution: error: the targets are scores: "
                             "--regression-target is always on")
        if getattr(task.cfg, "num_classes", 0) < 2:
            raise FairseqTreeError("score_distribution: error: needs --num-classes K >= 2 (the scores "
                             "1..K; label lines hold K values)")
        self.head_name = cfg.classification_head_name

    def forward(self, model, sample, reduce=True):
        logits, _ = model(**sample["net_input"], features_only=True,
                          classification_head_name=self.head_name)
        lprobs = F.log_softmax(logits, dim=-1, dtype=torch.float32)  # B x K
        targets = sample["target"].to(lprobs)  # B x K distributions
        loss = F.kl_div(lprobs, targets, reduction="sum")
        predicted, gold = expected_score(lprobs.exp()), expected_score(targets)
        logging_output = {
            "loss": loss.data, "ntokens": sample["ntokens"], "nsentences": targets.size(0),
            "sample_size": targets.size(0), "squared_error": ((predicted - gold) ** 2).sum().data,
        }
        if not model.training:
            logging_output["predicted"] = predicted.detach().cpu().tolist()
            logging_output["gold"] = gold.detach().cpu().tolist()
        return loss, targets.size(0), logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        def total(key):
            return sum(log.get(key, 0) for log in logging_outputs)

        sample_size = max(total("sample_size"), 1)
        metrics.log_scalar("loss", total("loss") / sample_size / math.log(2), sample_size, round=4)
        metrics.log_scalar("mse", total("squared_error") / sample_size, sample_size, round=4)
        predicted = [x for log in logging_outputs for x in log.get("predicted", [])]
        if len(predicted) > 1:
            gold = [x for log in logging_outputs for x in log.get("gold", [])]
            metrics.log_concat_tensor("_predicted", torch.tensor(predicted), dim=0)
            metrics.log_concat_tensor("_gold", torch.tensor(gold), dim=0)
            for name, key in (("pearson", "pearson"), ("spearman", "spearmanr")):
                metrics.log_derived(name, lambda meters, key=key: round(float(
                    pearson_and_spearman(meters["_predicted"].tensor.numpy(),
                                         meters["_gold"].tensor.numpy())[key]), 4))

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return False  # the lists of scores are concatenated, not summed
