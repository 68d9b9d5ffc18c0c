"""Running a command as the runner and the benchmarks run fairseq and the console scripts: its
output read line by line as it comes, shown, kept in a log, and returned."""

import subprocess
import sys
from pathlib import Path

from fairseq_tree.errors import CliError

TAIL = 3000  # characters of a failed command's output put in the error, when none was shown


def program(cmd: list[str]) -> str:
    """What ``cmd`` runs, for a message: its program's name; ``python -m MODULE COMMAND``'s module
    and command (the runner's fairseq commands)."""
    if cmd[1:2] == ["-m"]:
        return " ".join(cmd[2:4])
    return Path(cmd[0]).name


def run_command(cmd: list, log=None, show=True, merge_stderr: bool = True, env=None,
                cwd=None) -> str:
    """Run ``cmd`` and return its output (standard output and, with ``merge_stderr``, standard
    error as one stream; without, standard error goes to ours untouched). Each line is written
    to ``log`` (a file open for writing bytes; flushed, so that a killed run's log keeps every
    line) and shown on our standard error when ``show`` is true or, a function, is true of it.
    A non-zero exit raises ``CliError`` naming the program, with the output's end when no line
    was shown."""
    cmd = [str(part) for part in cmd]
    lines = []
    stderr = subprocess.STDOUT if merge_stderr else None
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, env=env, cwd=cwd) as proc:
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace")
            lines.append(line)
            if log is not None:
                log.write(raw)
                log.flush()
            if show is True or (callable(show) and show(line)):
                sys.stderr.write(line)
                sys.stderr.flush()
    output = "".join(lines)
    if proc.returncode != 0:
        tail = f":\n{output[-TAIL:]}" if show is False else ""
        raise CliError(f"{program(cmd)} exited with status {proc.returncode}{tail}")
    return output
