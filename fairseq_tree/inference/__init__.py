"""From raw text to a model's inputs, and from a checkpoint to a model: the one text pipeline
(``text``) and the one loader (``loading``). The translation and classification hubs
(``fairseq_tree.hub``, ``fairseq_tree.classification_hub``) sit on them; the masked LM's hub sits
with the models (``models.masked_lm_hub``), below the induced parser that reads it.
"""
