"""Command-line options of the tree2seq model beyond fairseq's Transformer options."""

from dataclasses import dataclass, field, fields
from typing import Optional

from fairseq.dataclass import FairseqDataclass


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

    @classmethod
    def from_args(cls, args) -> "TreeAttentionConfig":
        """The tree options of a fairseq config or namespace (defaults where absent)."""
        config = cls(**{f.name: getattr(args, f.name, f.default) for f in fields(cls)})
        if not config.no_hier_embed and config.hier_embed_size < 2:
            raise ValueError(f"--hier-embed-size must be at least 2, got {config.hier_embed_size}")
        return config

    @property
    def embedding_rows(self) -> Optional[int]:
        return None if self.no_hier_embed else self.hier_embed_size
