"""Command-line options of the syntactic decoder (``syntactic_decoder``), for both of its
models."""

from dataclasses import dataclass, field

from fairseq.dataclass import FairseqDataclass


@dataclass
class SyntacticDecoderConfig(FairseqDataclass):
    tree_depth_bias: int = field(
        default=0,
        metadata={
            "help": "with the syntactic decoder: a learned bias per head and layer on the "
            "difference of tree depth between query and key, clipped to [-N, N] (Transformer "
            "Grammars' relative positions, which they use in place of linear ones; here beside "
            "the position embeddings); 0: none"
        },
    )
