from fairseq_tree.criterions.node_classification import NodeClassificationCriterion

__all__ = ["NodeClassificationCriterion"]
