"""fairseq-tree: tree-to-sequence Transformers with hierarchical accumulation.

Nguyen et al., "Tree-structured Attention with Hierarchical Accumulation", ICLR 2020.
Load with ``fairseq-train --user-dir <path>/fairseq_tree``; importing the package registers the
``tree_translation`` and ``tree_classification`` tasks, the ``tree2seq``, ``tree_classifier``,
``recursive_multibranch_classifier`` and ``recursive_tree_attention_classifier`` models, the
``constituent_transformer`` masked LM (Wang et al., EMNLP 2019) with their architectures, and the
``node_classification`` and ``score_distribution`` criteria.
"""

import types

import numpy as np

# fairseq 0.12's TokenBlockDataset asks for np.compat.long in --sample-break-mode eos, which
# fairseq's masked_lm task needs for whole sentences (the Tree Transformer's samples); numpy 2
# removed np.compat. This restores the one name it reads (numpy 1's np.compat.long was int).
if not hasattr(np, "compat"):
    np.compat = types.SimpleNamespace(long=int)

# Before fairseq is imported below: its text-to-speech task's note is logged as fairseq imports it;
# in the plugin's console scripts, fairseq's libraries' deprecation warnings are ignored.
import sys  # noqa: E402

from fairseq_tree.library_noise import (  # noqa: E402
    drop_tensorboardx_note, ignore_library_warnings, is_plugin_command)

drop_tensorboardx_note()
if is_plugin_command(sys.argv[0] if sys.argv else ""):
    ignore_library_warnings()

from fairseq_tree import criterions, models, tasks  # noqa: E402,F401  (registers them with fairseq)
from fairseq_tree.checkpoints import allow_fairseq_checkpoints, refuse_unsafe_checkpoints  # noqa: E402
from fairseq_tree.errors import install_for_fairseq_commands  # noqa: E402
from fairseq_tree.hub import from_pretrained as translation_hub  # noqa: E402
from fairseq_tree.process_group import destroy_process_group_at_exit  # noqa: E402

# Registration, as the imports above register tasks and models: the classes fairseq checkpoints
# hold, for torch's weights-only loading; a refused checkpoint said in one line; under a fairseq
# command, our errors printed as one line; a data-parallel process group destroyed before exit.
allow_fairseq_checkpoints()
refuse_unsafe_checkpoints()
install_for_fairseq_commands()
destroy_process_group_at_exit()
# The models' front door to the hub above them (as fairseq's from_pretrained reaches hub_utils).
models.Tree2SeqModel.hub_loader = translation_hub
