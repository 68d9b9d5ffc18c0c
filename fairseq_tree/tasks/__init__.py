from fairseq_tree.tasks.tree_classification import TreeClassificationConfig, TreeClassificationTask
from fairseq_tree.tasks.tree_translation import TreeTranslationConfig, TreeTranslationTask

__all__ = [
    "TreeClassificationConfig",
    "TreeClassificationTask",
    "TreeTranslationConfig",
    "TreeTranslationTask",
]
