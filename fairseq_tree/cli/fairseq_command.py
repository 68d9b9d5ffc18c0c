"""fairseq's own commands as the plugin's scripts run them: the plugin imported before fairseq.

    python -m fairseq_tree.cli.fairseq_command generate DATA --user-dir fairseq_tree ...

runs ``fairseq-generate DATA --user-dir fairseq_tree ...`` (``validate``: fairseq-validate), every
argument fairseq's. fairseq's console scripts import fairseq, and with it what its libraries
print as they are imported, before they read ``--user-dir``; here the plugin comes first, so
that the run shows fairseq's progress without that noise (``fairseq_tree.library_noise``), and
an error of ours ends it with its one line, as under fairseq's own command.
"""

import importlib
import logging
import os
import sys

from fairseq_tree.errors import install_for_fairseq_commands
from fairseq_tree.library_noise import ignore_library_warnings

COMMANDS = ("generate", "validate")


def cli_main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        sys.exit(f"fairseq_command: error: the first argument names the command, one of "
                 f"{', '.join(COMMANDS)}")
    name, *arguments = argv
    command = importlib.import_module(f"fairseq_cli.{name}")
    # fairseq's scripts set its log format and level (INFO) on standard output, but only where
    # nothing set them first, and fairseq's wav2vec2 classification model, imported with every
    # model, sets the root logger to DEBUG (hydra's debug lines then show): fairseq's settings
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
                        datefmt="%Y-%m-%d %H:%M:%S", stream=sys.stdout, force=True,
                        level=os.environ.get("LOGLEVEL", "INFO").upper())
    sys.argv = [f"fairseq-{name}", *arguments]
    install_for_fairseq_commands()
    ignore_library_warnings()
    command.cli_main()


if __name__ == "__main__":
    cli_main()
