"""Command-line options of the tree2seq model beyond fairseq's Transformer options."""

from dataclasses import dataclass, field, fields
from typing import Optional

from fairseq.dataclass import FairseqDataclass

from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.models.syntactic_decoder_config import SyntacticDecoderConfig
from fairseq_tree.modules.hierarchical_accumulation import AccumulationConventions


@dataclass
class TreeAttentionConfig(FairseqDataclass):
    hier_embed_size: int = field(
        default=100,
        metadata={
            "help": "rows |E| of each hierarchical embedding table E^v, E^h (Eq. 9); longer "
            "paths and later leaf ranks share the last row"
        },
    )
    no_hier_embed: bool = field(
        default=False,
        metadata={"help": "no hierarchical embeddings: Eq. 8 instead of Eq. 10 (-HierEmb, Table 3)"},
    )
    no_subtree_mask: bool = field(
        default=False,
        metadata={
            "help": "nodes attend to every leaf and node instead of their own subtree "
            "(-SubMask, Table 3); leaves still attend to leaves only"
        },
    )
    released_accumulation: bool = field(
        default=False,
        metadata={"help": "compute the accumulation as the authors' released code does, not as "
                  "the paper's equations: all four --released-* conventions below"},
    )
    released_path_count: bool = field(
        default=False,
        metadata={"help": "released code (a): each branch sum of Eq. 6 divided by the nodes "
                  "on the path, |P(i,j)|, not 1 + |P(i,j)| (the leaf summed, not counted)"},
    )
    released_depth_index: bool = field(
        default=False,
        metadata={"help": "released code (b): Eq. 9's vertical embedding row is the node's "
                  "depth from the root, the same for all its leaves, not the nodes from it "
                  "down to the leaf"},
    )
    released_head_weights: bool = field(
        default=False,
        metadata={"help": "released code (c): the leaf weights of Eq. 7 per attention head "
                  "with a bias, w = L U + b (U: C x heads), not one vector u"},
    )
    released_embedding_init: bool = field(
        default=False,
        metadata={"help": "released code (d): E^v and E^h with 50 and 100 rows in use (depths "
                  "1-50, ranks 1-100; not --hier-embed-size each), initialised from N(0, 1)"},
    )

    @property
    def conventions(self) -> AccumulationConventions:
        """The released code's conventions switched on (all of them with
        --released-accumulation)."""
        every = self.released_accumulation
        return AccumulationConventions(
            path_count_average=every or self.released_path_count,
            root_depth_index=every or self.released_depth_index,
            head_leaf_weights=every or self.released_head_weights,
            released_embedding_init=every or self.released_embedding_init,
        )

    @classmethod
    def from_args(cls, args) -> "TreeAttentionConfig":
        """The tree options of a fairseq config or namespace (defaults where absent)."""
        config = cls(**{f.name: getattr(args, f.name, f.default) for f in fields(cls)})
        if not config.no_hier_embed and config.hier_embed_size < 2:
            raise FairseqTreeError(f"--hier-embed-size must be at least 2, got {config.hier_embed_size}")
        return config

    @property
    def embedding_rows(self) -> Optional[int]:
        return None if self.no_hier_embed else self.hier_embed_size


@dataclass
class Tree2SeqConfig(TreeAttentionConfig, SyntacticDecoderConfig):
    """tree2seq's options: the tree attention's, and its decoder's."""

    cross_attention_nodes_only: bool = field(
        default=False,
        metadata={
            "help": "the decoder's cross-attention reads the source tree's nodes only, not its "
            "leaves (an ablation: the words reach the decoder through the accumulated values of "
            "their phrases, not as keys at their linear positions)"
        },
    )
    syntactic_decoder: bool = field(
        default=False,
        metadata={
            "help": "the decoder's self-attention follows the tree it writes (needs "
            "--target-trees): Transformer Grammars' STACK / COMPOSE masks in place of the causal "
            "mask (the tree2seq_syntactic_decoder architecture)"
        },
    )
