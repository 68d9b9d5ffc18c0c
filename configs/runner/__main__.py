"""``python configs/runner ...`` from any folder: the repository root goes on the path, so that
the runner imports as the package ``configs.runner``."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from configs.runner.experiment import cli_main  # noqa: E402

cli_main()
