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
from fairseq_tree.modules.multi_branch_attention import (
    MultiBranchAttention,
    MultiBranchComposition,
    RecursiveMultiBranchAttention,
)
from fairseq_tree.modules.recursion_plan import (
    RecursionLevel,
    RecursionPlan,
    flat_plan_from_spans,
    plan_from_heads,
    plan_from_spans,
)
from fairseq_tree.modules.recursive_tree import RecursiveOutput, recurse
from fairseq_tree.modules.recursive_tree_attention import RecursiveTreeAttention
from fairseq_tree.modules.right_frontier import RightFrontierAttention, right_frontier_mask
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
    "MultiBranchAttention",
    "MultiBranchComposition",
    "RecursionLevel",
    "RecursionPlan",
    "RecursiveMultiBranchAttention",
    "RecursiveOutput",
    "RecursiveTreeAttention",
    "RightFrontierAttention",
    "SourceTree",
    "TreeCrossAttention",
    "TreeDecoderLayer",
    "TreeEncoderLayer",
    "TreeSelfAttention",
    "accumulate",
    "build_accumulation_plan",
    "flat_plan_from_spans",
    "hierarchical_accumulation",
    "plan_from_heads",
    "plan_from_spans",
    "recurse",
    "right_frontier_mask",
]
