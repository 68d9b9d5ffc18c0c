"""Reading fairseq's logs: the progress records of ``--log-format json``, and the two lines fairseq
logs in every format (a run's configuration, first, and its parameter count).

fairseq's JSON progress bar logs one JSON object a line, under the name of what it reports:
``train_inner`` every ``--log-interval`` updates, ``train`` at the end of an epoch, and a subset's
name (``valid``, ``test``, ...) after its validation (fairseq-train's and fairseq-validate's)::

    2026-11-26 13:00:02 | INFO | train | {"epoch": 3, "train_loss": "4.2", ..., "train_wall": "95"}

An end-of-epoch or validation record has its keys prefixed with that name (``train_wall`` is the
epoch's ``wall``, ``train_train_wall`` its ``train_wall``); ``progress_records`` takes the prefix
off, so a record's keys are the names of the simple format's fields. Values are fairseq's
formatted strings ("95", "51.2"), as the simple format prints them.
"""

import json
import re
from datetime import datetime

RECORD = re.compile(r"\| (\S+) \| (\{.*\})\s*$")
PARAMETERS = re.compile(r"num\. (?:shared )?model params: ([\d,]+)")
# fairseq-train's configuration, the first line of each run: a resumed run's log holds several,
# and each run has its own wall clock (see run_seconds)
RUN_START = re.compile(r"^(?=.*\| fairseq_cli\.train \| \{'_name')", re.MULTILINE)
TIMESTAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) ")


def progress_records(text: str, kinds=None) -> list[dict]:
    """The JSON progress records of a fairseq log, in order, each with what it reports (the
    logger name: ``train_inner``, ``train``, ``valid``, ...) as ``kind``; only ``kinds`` when
    given. Other lines, and log lines in another format, are left out."""
    records = []
    for line in text.splitlines():
        match = RECORD.search(line)
        if not match or (kinds is not None and match.group(1) not in kinds):
            continue
        try:
            record = json.loads(match.group(2))
        except ValueError:  # a dict logged by other code (fairseq_cli.train's configuration)
            continue
        kind, prefix = match.group(1), match.group(1) + "_"
        records.append({"kind": kind, **{key.removeprefix(prefix): value
                                         for key, value in record.items()}})
    return records


def parameter_counts(text: str) -> list[int]:
    """Every parameter count fairseq-train logged (one per run of a resumed run)."""
    return [int(count.replace(",", "")) for count in PARAMETERS.findall(text)]


def runs(text: str) -> list[str]:
    """The log split before the configuration line that starts each fairseq-train run it holds
    (the text before the first, if any, first)."""
    return RUN_START.split(text)


def run_seconds(run: str) -> int:
    """The seconds of one fairseq-train run (a piece of ``runs``) up to its last epoch summary,
    0 without one: fairseq's ``wall`` there, or, where that reads 0, the log's timestamps from
    the run's first line to that summary. A run resumed from a checkpoint logs a wall of
    0 throughout: fairseq 0.12 loads its wall stopwatch stopped and never starts it again."""
    lines = run.splitlines()
    summary = next((line for line in reversed(lines)
                    if (match := RECORD.search(line)) and match.group(1) == "train"), None)
    if summary is None:
        return 0
    wall = int(progress_records(summary)[0]["wall"])
    start = next((match.group(1) for line in lines if (match := TIMESTAMP.match(line))), None)
    end = TIMESTAMP.match(summary)
    if wall or not (start and end):
        return wall
    first, last = (datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S")
                   for stamp in (start, end.group(1)))
    return round((last - first).total_seconds())
