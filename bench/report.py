"""What the benchmark scripts share: writing their report as JSON."""

import json
from pathlib import Path


def write_json(path: str, report) -> None:
    """``report`` as indented JSON at ``path``, its folder created if needed."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
