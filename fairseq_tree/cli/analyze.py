"""fairseq-tree-analyze: where a trained tree2seq model looks, phrases (nodes) or words (leaves),
as the paper's Table 4 (Nguyen et al., ICLR 2020, Section 6), with pictures.

    fairseq-tree-analyze DATA-BIN --path checkpoints/tree2seq/checkpoint_best.pt \\
        [--gen-subset test] [--json analysis.json] [--plot DIR --sentence 0]

The model reads every sentence of the split with its reference translation (teacher forcing, as
in training; no beam search). Reported:

* decoder (tree cross-attention, Eqs. 21-24): for each target token, the attention probability
  on the node keys, on the word keys and on the source EOS, averaged over heads, layers and the
  split's target tokens (every token counts once); also per layer, and per node label (the
  probability on nodes of that label; beside it the label's share of the split's nodes, which is
  what uniform attention over the nodes would give);
* encoder (tree self-attention): the same for the node queries (Eq. 17: a node attends the words
  of its span and the nodes of its subtree); leaf queries attend leaves only (Eq. 18), so they
  are not counted;
* the split's constituents: words and nodes (EOS counted in neither), as the paper's
  Leaves/Nodes row;
* the paper's Table 4 beside them.

Choices the paper leaves open, made here: probability mass (not argmax counts); teacher forcing
on the references; heads and layers averaged with equal weight; EOS, a leaf key of the model,
reported apart from the words. ``--plot DIR`` draws, for sentence ``--sentence``, the source
tree (nodes above their words) over a heat map of each target token's cross-attention on the
same columns (mean over heads and layers, or ``--plot-layer``), and the node share per layer
as a bar chart (PNG, matplotlib).

The probabilities are the attentions' own: each is asked for its per-head weights
(``need_head_weights``, as fairseq's ``MultiheadAttention``) by a forward hook. A command line
over ``fairseq_tree.analysis``.
"""

import argparse
import json
import logging
import os

from fairseq_tree.analysis.attention import analyze, load, sentence_attention
from fairseq_tree.analysis.plots import plot_layers, plot_sentence
from fairseq_tree.analysis.tables import table
from fairseq_tree.cli.console import run_console
from fairseq_tree.errors import CliError
from fairseq_tree.line_files import open_output

logger = logging.getLogger("fairseq_tree.cli.analyze")
PROG = "fairseq-tree-analyze"


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("data", help="the data-bin the model was trained on")
    parser.add_argument("--path", required=True, help="the tree2seq checkpoint")
    parser.add_argument("--gen-subset", default="test", help="the split to read (default test)")
    parser.add_argument("--max-tokens", type=int, default=4096)
    parser.add_argument("--max-sentences", type=int, metavar="N",
                        help="only the first N sentences of the split")
    parser.add_argument("--json", metavar="FILE", help="write the result here too")
    parser.add_argument("--plot", metavar="DIR", help="write the pictures (PNG) into DIR")
    parser.add_argument("--sentence", type=int, default=0,
                        help="the sentence (index in the split) of the attention picture")
    parser.add_argument("--plot-layer", type=int, metavar="L",
                        help="the picture shows decoder layer L (1-based); default the mean")
    return parser


def main(args):
    model, task = load(args.data, args.path)
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise CliError("--plot needs matplotlib: pip install matplotlib") from None
    result = analyze(model, task, args.gen_subset, args.max_tokens, args.max_sentences)
    result.update(checkpoint=args.path, data=args.data)
    print("\n".join(table(result)), flush=True)
    if args.json:
        with open_output(args.json) as sink:
            sink.write(json.dumps(result, indent=2).encode("utf-8") + b"\n")
    if args.plot:
        os.makedirs(args.plot, exist_ok=True)
        layer = None if args.plot_layer is None else args.plot_layer - 1
        picture = sentence_attention(model, task, args.gen_subset, args.sentence, layer)
        sentence_png = os.path.join(args.plot, f"attention-{args.gen_subset}-{args.sentence}.png")
        plot_sentence(picture, sentence_png)
        layers_png = os.path.join(args.plot, "node-share-per-layer.png")
        plot_layers(result, layers_png)
        logger.info(f"pictures: {sentence_png}, {layers_png}")


def cli_main(argv=None):
    run_console(PROG, get_parser(), main, argv)


if __name__ == "__main__":
    cli_main()
