"""Text files read and written line by line, as every tool of the package reads them: standard
streams for ``-``, each line located as FILE:LINE and checked to be UTF-8 on its own (so a bad
line is reported without losing line alignment), outputs that appear only when complete, and
lines taken in batches."""

import contextlib
import itertools
import os
import sys
from collections.abc import Iterable, Iterator
from typing import BinaryIO

from fairseq_tree.errors import FairseqTreeError

STDIO = "-"


class LineError(FairseqTreeError):
    """A line that cannot be read as what it should hold; the message starts with FILE:LINE."""


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
    """The line as text; invalid UTF-8 is a ``LineError``."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise LineError(f"{where}: not valid UTF-8 ({err.reason} at byte {err.start})") from None


def batched(items: Iterable, size: int) -> Iterator[list]:
    """Lists of ``size`` items, read lazily (the last may be shorter)."""
    iterator = iter(items)
    while batch := list(itertools.islice(iterator, size)):
        yield batch
