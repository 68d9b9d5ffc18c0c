"""fairseq-tree: tree-to-sequence Transformers with hierarchical accumulation.

Nguyen et al., "Tree-structured Attention with Hierarchical Accumulation", ICLR 2020.
Load with ``fairseq-train --user-dir <path>/fairseq_tree``; importing the package registers the
``tree_translation`` and ``tree_classification`` tasks, the ``tree2seq``, ``tree_classifier``,
``recursive_multibranch_classifier`` and ``recursive_tree_attention_classifier`` models with
their architectures, and the ``node_classification`` and ``score_distribution`` criteria.
"""

import os

# torch >= 2.6 loads checkpoints with weights_only=True, which rejects the argparse.Namespace
# that fairseq stores in every checkpoint. This is the one environment default the plugin sets;
# an explicit value from the user wins.
os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")

from fairseq_tree import criterions, models, tasks  # noqa: E402,F401  (registers them with fairseq)
