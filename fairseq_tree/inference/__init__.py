"""From raw text to a model's inputs, and from a checkpoint to a model: the one text pipeline
(``text``), the one loader (``loading``) and the masked LM's hub (``masked_lm``). The translation
and classification hubs (``fairseq_tree.hub``, ``fairseq_tree.classification_hub``) sit on them.
"""
