"""The project's one error type, and how a command line shows it.

Library code (tasks, criterions, models, data) raises ``FairseqTreeError``: a Python caller, a
notebook or ``from_pretrained`` gets an exception it can catch, never an ended interpreter. The
command-line entry points print it as the one line it is, without a traceback.
"""

import sys


class FairseqTreeError(ValueError):
    """Wrong input, options or checkpoint, said in one line meant for the user as is (a bad input
    line starts with FILE:LINE)."""


class CliError(FairseqTreeError):
    """A command-line tool's error (the console scripts, data-prep, the configs runner, bench):
    it ends the run with a one-line message; for a bad input line it starts with FILE:LINE."""


def is_fairseq_command(argv0: str) -> bool:
    """Whether the running program is a fairseq console script (``fairseq-train``, ...) or
    ``python -m fairseq_cli.X``: the programs that import the plugin by ``--user-dir`` and
    whose ``main`` the plugin cannot wrap."""
    return argv0.rsplit("/", 1)[-1].startswith("fairseq-") or "/fairseq_cli/" in argv0


def print_one_line(previous_hook):
    """A ``sys.excepthook`` that prints an uncaught ``FairseqTreeError`` as its one line (the
    process still exits with status 1) and hands every other exception to ``previous_hook``."""

    def hook(kind, error, traceback):
        if issubclass(kind, FairseqTreeError):
            print(error, file=sys.stderr)
        else:
            previous_hook(kind, error, traceback)

    hook.previous = previous_hook
    return hook


def install_for_fairseq_commands():
    """Under ``fairseq-train`` / ``-generate`` / ``-validate`` / ..., an error of ours ends the
    run with one line, as fairseq's own argument errors do. Elsewhere (Python, notebooks, tests
    in one process) nothing changes: the exception propagates with its traceback."""
    if is_fairseq_command(sys.argv[0] if sys.argv else "") and \
            not hasattr(sys.excepthook, "previous"):
        sys.excepthook = print_one_line(sys.excepthook)
