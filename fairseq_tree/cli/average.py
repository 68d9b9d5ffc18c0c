"""Average the parameters of the last N checkpoints of a training run (Vaswani et al., 2017).

    python -m fairseq_tree.cli.average --dir checkpoints/wmt14-en-de/tree2seq --last 5 \\
        --of updates --output checkpoints/wmt14-en-de/tree2seq/averaged-last5.pt

A command line over ``fairseq_tree.checkpoint_averaging``, which says how.
"""

import argparse
import logging

from fairseq_tree.checkpoint_averaging import (
    PATTERNS,
    average_checkpoints,
    last_checkpoints,
    save_state,
)
from fairseq_tree.cli.console import run_console

logger = logging.getLogger("fairseq_tree.cli.average")


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m fairseq_tree.cli.average",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--dir", required=True, help="the --save-dir of the training run")
    parser.add_argument("--last", type=int, required=True, metavar="N",
                        help="average the N newest checkpoints")
    parser.add_argument("--of", choices=sorted(PATTERNS), default="updates",
                        help="checkpoint_{epoch}_{updates}.pt (updates) or checkpoint{epoch}.pt")
    parser.add_argument("--output", required=True, help="the averaged checkpoint to write")
    return parser


def average(args):
    """Average the last ``--last`` checkpoints of ``--dir`` into ``--output``."""
    paths = last_checkpoints(args.dir, args.last, args.of)
    save_state(average_checkpoints(paths), args.output)
    logger.info(f"averaged {len(paths)} checkpoints into {args.output}")


def cli_main(argv=None):
    """Console entry point: errors end the run with one line "average: error: ..."."""
    run_console("average", get_parser(), average, argv)


if __name__ == "__main__":
    cli_main()
