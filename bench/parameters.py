"""Parameter counts of tree2seq against fairseq's Transformer of the same size and vocabulary
(the paper's Table 5 reports about +0.1%).

    python -m bench.parameters [--vocabulary 32000] [--json FILE]
"""

import argparse
import sys

from fairseq.data import Dictionary
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

import fairseq_tree  # noqa: F401  (registers tree2seq)
from bench.lib.report import markdown_table, write_json
from fairseq_tree.modules.tree_attention import TreeAttentionBase

PAIRS = [
    ("tree2seq_iwslt_de_en", "transformer_iwslt_de_en"),
    ("tree2seq_wmt_en_de", "transformer_wmt_en_de"),
    ("tree2seq_vaswani_wmt_en_de_big", "transformer_vaswani_wmt_en_de_big"),
]


class _Task:
    def __init__(self, dictionary):
        self.source_dictionary = self.target_dictionary = dictionary


def count_parameters(arch: str, dictionary: Dictionary) -> int:
    """Trained parameters of ``arch`` built as fairseq-train builds it, with shared embeddings:
    the tree attentions' zero rows, which align a product and never train, left out."""
    args = argparse.Namespace(arch=arch, share_all_embeddings=True)
    ARCH_CONFIG_REGISTRY[arch](args)
    model = ARCH_MODEL_REGISTRY[arch].build_model(args, _Task(dictionary))
    zero_rows = sum(m.zero_row_parameters for m in model.modules()
                    if isinstance(m, TreeAttentionBase))
    return sum(p.numel() for p in model.parameters()) - zero_rows


def parameters_table(report) -> list:
    """The table printed and shown in bench/RESULTS.md: each pair's counts, the parameters the
    tree adds and their share of the Transformer's."""
    return markdown_table(
        ["tree2seq", "parameters", "transformer", "added", "overhead"],
        [[row["tree2seq"], f"{row['tree2seq_parameters']:,}", f"{row['transformer_parameters']:,}",
          f"{row['tree2seq_parameters'] - row['transformer_parameters']:,}",
          f"{row['overhead_percent']:.3f}%"] for row in report["results"]])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vocabulary", type=int, default=32000, help="joined dictionary size")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    dictionary = Dictionary()
    for i in range(args.vocabulary - len(dictionary)):
        dictionary.add_symbol(f"w{i}")
    rows = []
    for tree_arch, transformer_arch in PAIRS:
        tree = count_parameters(tree_arch, dictionary)
        plain = count_parameters(transformer_arch, dictionary)
        rows.append({"tree2seq": tree_arch, "transformer": transformer_arch,
                     "tree2seq_parameters": tree, "transformer_parameters": plain,
                     "overhead_percent": 100 * (tree - plain) / plain})
    report = {"vocabulary": len(dictionary), "results": rows}
    print("\n".join(parameters_table(report)))
    if args.json:
        write_json(args.json, report)
    return rows


if __name__ == "__main__":
    sys.exit(main() and 0)
