"""What the benchmark scripts share: writing their report as JSON, and reading it back to resume
a run."""

import json
import sys
from pathlib import Path


def write_json(path: str, report) -> None:
    """``report`` as indented JSON at ``path``, its folder created if needed."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


def previous_report(path: str | None, settings: dict | None = None, keys=()) -> dict:
    """The report already at ``path`` (empty if there is none), whose results a resumed run
    keeps. Exits if it was made with other ``settings`` in one of ``keys``: results of other
    settings are not comparable, and mixing them would go unseen."""
    if not path or not Path(path).exists():
        return {}
    report = json.loads(Path(path).read_text(encoding="utf-8"))
    made = report.get("settings", {})
    for key in keys:
        if made.get(key) != settings[key]:
            sys.exit(f"{path} holds results made with {key} = {made.get(key)!r}, not "
                     f"{settings[key]!r}: run with its settings, or write another --json")
    return report
