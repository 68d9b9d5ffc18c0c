from fairseq_tree.tasks.tree_translation import TreeTranslationConfig, TreeTranslationTask

__all__ = ["TreeTranslationConfig", "TreeTranslationTask"]
