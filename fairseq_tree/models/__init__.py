from fairseq_tree.models.constituent_transformer import (
    ConstituentRobertaEncoder,
    ConstituentTransformerEncoder,
    ConstituentTransformerModel,
)
from fairseq_tree.models.recursive_classifiers import (
    RecursiveMultiBranchClassifier,
    RecursiveTreeAttentionClassifier,
)
from fairseq_tree.models.syntactic_decoder import (
    SyntacticDecoder,
    SyntacticTransformerModel,
    SyntacticTreeDecoder,
)
from fairseq_tree.models.tree2seq import Tree2SeqModel
from fairseq_tree.models.tree2seq_config import Tree2SeqConfig, TreeAttentionConfig
from fairseq_tree.models.tree_classifier import TreeClassifierModel
from fairseq_tree.models.tree_decoder import TreeDecoder
from fairseq_tree.models.tree_encoder import TreeEncoder

__all__ = ["ConstituentRobertaEncoder", "ConstituentTransformerEncoder",
           "ConstituentTransformerModel", "RecursiveMultiBranchClassifier",
           "RecursiveTreeAttentionClassifier", "SyntacticDecoder", "SyntacticTransformerModel",
           "SyntacticTreeDecoder", "Tree2SeqConfig", "Tree2SeqModel",
           "TreeAttentionConfig", "TreeClassifierModel", "TreeDecoder", "TreeEncoder"]
