from fairseq_tree.modules.constituent_attention import (
    ConstituentEncoderLayer,
    ConstituentSelfAttention,
    LinkChain,
)
from fairseq_tree.modules.hierarchical_accumulation import (
    AccumulationPlan,
    accumulate,
    build_accumulation_plan,
    hierarchical_accumulation,
)
from fairseq_tree.modules.source_tree import SourceTree
from fairseq_tree.modules.tree_attention import (
    HierarchicalEmbedding,
    TreeCrossAttention,
    TreeSelfAttention,
)
from fairseq_tree.modules.tree_transformer_layer import TreeDecoderLayer, TreeEncoderLayer

__all__ = [
    "AccumulationPlan",
    "ConstituentEncoderLayer",
    "ConstituentSelfAttention",
    "HierarchicalEmbedding",
    "LinkChain",
    "SourceTree",
    "TreeCrossAttention",
    "TreeDecoderLayer",
    "TreeEncoderLayer",
    "TreeSelfAttention",
    "accumulate",
    "build_accumulation_plan",
    "hierarchical_accumulation",
]
