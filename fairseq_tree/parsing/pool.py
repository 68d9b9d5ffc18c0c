"""Parsing batches in worker processes, results in input order, a bounded number in flight."""

from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor

from fairseq_tree.parsing import build_parser
from fairseq_tree.parsing.base import ParseResult

_worker_parser = None  # each worker process builds its own backend on its first batch


def _parse_in_worker(spec: tuple, batch: list[list[str]]) -> list[ParseResult]:
    global _worker_parser
    if _worker_parser is None:
        name, lang, options = spec
        _worker_parser = build_parser(name, lang, **options)
    return _worker_parser.parse(batch)


def parse_batches(spec: tuple, batches: Iterable[list[list[str]]],
                  workers: int) -> Iterator[list[ParseResult]]:
    """Parsed batches in input order. ``spec`` is ``(name, lang, options)`` for
    ``build_parser``; with one worker the parser runs in this process. At most two batches per
    worker are read ahead, so memory does not grow with the input."""
    if workers <= 1:
        parser = build_parser(spec[0], spec[1], **spec[2])
        try:
            yield from (parser.parse(batch) for batch in batches)
        finally:
            parser.close()
        return
    pool = ProcessPoolExecutor(max_workers=workers)
    try:
        pending: deque = deque()
        for batch in batches:
            pending.append(pool.submit(_parse_in_worker, spec, batch))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(cancel_futures=True)  # after an error, do not parse what is left
