from fairseq_tree.criterions.node_classification import NodeClassificationCriterion
from fairseq_tree.criterions.score_distribution import ScoreDistributionCriterion

__all__ = ["NodeClassificationCriterion", "ScoreDistributionCriterion"]
