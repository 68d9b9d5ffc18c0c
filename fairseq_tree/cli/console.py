"""What the console scripts share: standard streams, FILE:LINE input, atomic output, and
one-line errors instead of tracebacks."""

import argparse
import contextlib
import itertools
import logging
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO

from fairseq_tree.errors import FairseqTreeError

STDIO = "-"


class CliError(FairseqTreeError):
    """Ends the run with a one-line message; for a bad input line it starts with FILE:LINE."""


@contextlib.contextmanager
def open_input(path: str) -> Iterator[BinaryIO]:
    """A file, or standard input for ``-``, read as bytes (decoded line by line)."""
    if path == STDIO:
        yield sys.stdin.buffer
    else:
        with open(path, "rb") as handle:
            yield handle


@contextlib.contextmanager
def open_output(path: str) -> Iterator[BinaryIO]:
    """A file, or standard output for ``-``, written as bytes. A file written here appears under
    its name only once complete: a failed run leaves no half-segmented output behind."""
    if path == STDIO:
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    partial = f"{path}.partial"
    try:
        with open(partial, "wb") as handle:
            yield handle
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def numbered_lines(path: str) -> Iterator[tuple[str, bytes]]:
    """``("FILE:LINE", line)`` for every line of ``path``, without its line break."""
    name = "<stdin>" if path == STDIO else path
    with open_input(path) as handle:
        for lineno, line in enumerate(handle, start=1):
            yield f"{name}:{lineno}", line.rstrip(b"\r\n")


def decode_line(raw: bytes, where: str) -> str:
    """The line as text; invalid UTF-8 is a ``CliError``."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CliError(f"{where}: not valid UTF-8 ({err.reason} at byte {err.start})") from None


def batched(items: Iterable, size: int) -> Iterator[list]:
    """Lists of ``size`` items, read lazily (the last may be shorter)."""
    iterator = iter(items)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


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
