"""What the console scripts share: fairseq's log format on stderr, and one-line errors instead
of tracebacks."""

import argparse
import logging
import sys
from collections.abc import Callable

from fairseq_tree.errors import FairseqTreeError


def run_console(prog: str, parser: argparse.ArgumentParser, action: Callable, argv=None,
                errors: tuple = ()):
    """Parse ``argv``, log to stderr as fairseq does, run ``action(args)``; a
    ``FairseqTreeError``, ``OSError`` or one of ``errors`` ends the run with one line
    "PROG: error: ..."."""
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
                        level=logging.INFO, stream=sys.stderr, force=True)
    args = parser.parse_args(argv)
    try:
        action(args)
    except (FairseqTreeError, OSError, *errors) as err:
        sys.exit(f"{prog}: error: {err}")
