"""Progress of long passes over a corpus: a bar on a terminal, periodic log lines otherwise."""

import logging
import sys
import time

logger = logging.getLogger(__name__)


class Progress:
    """Counts items done; use as a context manager around the pass."""

    def __init__(self, desc: str, unit: str = "pairs", interval: int = 100_000):
        self.desc, self.unit, self.interval, self.done = desc, unit, interval, 0
        self.start = time.monotonic()
        self.bar = None
        if sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(desc=desc, unit=f" {unit}", file=sys.stderr, leave=False)

    def update(self, n: int):
        before, self.done = self.done, self.done + n
        if self.bar is not None:
            self.bar.update(n)
        elif before // self.interval != self.done // self.interval:
            rate = self.done / max(time.monotonic() - self.start, 1e-9)
            logger.info(f"{self.desc}: {self.done} {self.unit} ({rate:.0f} {self.unit}/s)")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.close()
