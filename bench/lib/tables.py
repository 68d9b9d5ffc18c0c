"""The tables of bench/RESULTS.md, written from the JSON the benchmarks stored: each sits between
two comments that name the function which writes it and the JSON it reads,

    <!-- table: bench.agreement.attractor_table bench/results/agreement-spacy-test.json split=test -->
    | model | ... |
    <!-- end table -->

(``key=value`` options after the JSON go to the function as keywords, their values read as JSON
where they parse as JSON, else as strings). The function takes the loaded report and returns the
table's lines; it lives beside the benchmark that made the JSON. A table that no JSON holds is
preceded by a line ``<!-- not in a JSON: WHY -->`` and stays as typed.

    python -m bench.lib.tables                 # check every table of bench/RESULTS.md; exit 1 on a difference
    python -m bench.lib.tables --write         # rewrite them from their JSON
"""

import argparse
import difflib
import importlib
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "RESULTS.md"
BEGIN = re.compile(r"^<!-- table: (?P<function>[\w.]+) (?P<json>\S+)(?P<options>.*?) -->$")
END = "<!-- end table -->"
NOT_IN_A_JSON = "<!-- not in a JSON:"


class TableError(Exception):
    """A table block that cannot be read or written (the message names the file and line)."""


@dataclass
class Block:
    """One generated table: where it is (0-based lines of its markers) and what writes it."""

    begin: int
    end: int
    function: str
    json: str
    options: dict = field(default_factory=dict)
    lines: list = field(default_factory=list)


def option_value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def read_blocks(path: Path, lines: list[str]) -> list[Block]:
    blocks, open_block = [], None
    for number, line in enumerate(lines):
        match = BEGIN.match(line)
        if line.startswith("<!-- table:") and not match:
            raise TableError(f"{path}:{number + 1}: a table marker needs a function and a JSON: {line}")
        if match:
            if open_block:
                raise TableError(f"{path}:{number + 1}: a table begins inside the one of line "
                                 f"{open_block.begin + 1}")
            options = {}
            for item in match["options"].split():
                key, sep, value = item.partition("=")
                if not sep:
                    raise TableError(f"{path}:{number + 1}: option {item!r} is not key=value")
                options[key] = option_value(value)
            open_block = Block(number, -1, match["function"], match["json"], options)
        elif line == END:
            if not open_block:
                raise TableError(f"{path}:{number + 1}: {END} without a table marker before it")
            open_block.end = number
            open_block.lines = lines[open_block.begin + 1:number]
            blocks.append(open_block)
            open_block = None
    if open_block:
        raise TableError(f"{path}:{open_block.begin + 1}: the table is never closed ({END})")
    return blocks


def render(block: Block, path: Path) -> list[str]:
    """The table ``block``'s function writes from its JSON (a path from the repository root)."""
    module_name, _, function_name = block.function.rpartition(".")
    where = f"{path}:{block.begin + 1}"
    try:
        function = getattr(importlib.import_module(module_name), function_name)
    except (ImportError, AttributeError, ValueError) as error:
        raise TableError(f"{where}: no table function {block.function} ({error})") from None
    source = ROOT / block.json
    try:
        report = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise TableError(f"{where}: cannot read {block.json}: {error}") from None
    return list(function(report, **block.options))


def hand_typed_tables(path: Path, lines: list[str], blocks: list[Block]) -> list[int]:
    """The (1-based) first lines of the tables outside every block and not marked as in no JSON."""
    inside = {n for block in blocks for n in range(block.begin, block.end + 1)}
    found = []
    for number, line in enumerate(lines):
        starts = line.startswith("|") and not (number > 0 and lines[number - 1].startswith("|"))
        if starts and number not in inside:
            above = next((lines[n] for n in range(number - 1, -1, -1) if lines[n].strip()), "")
            if not above.startswith(NOT_IN_A_JSON):
                found.append(number + 1)
    return found


def check(path: Path = RESULTS, write: bool = False, out=sys.stdout) -> list[str]:
    """The problems of ``path``'s tables: a block whose lines differ from what its function
    writes (a diff), a table typed by hand. With ``write`` the blocks are rewritten instead."""
    lines = path.read_text(encoding="utf-8").split("\n")
    blocks = read_blocks(path, lines)
    problems = [f"{path}:{n}: a table outside <!-- table: ... --> with no '{NOT_IN_A_JSON} ...' "
                "line above it" for n in hand_typed_tables(path, lines, blocks)]
    for block in reversed(blocks):
        written = render(block, path)
        if written != block.lines:
            if write:
                lines[block.begin + 1:block.end] = written
            else:
                diff = difflib.unified_diff(block.lines, written, "RESULTS.md", block.json,
                                            lineterm="", n=0)
                problems.append(f"{path}:{block.begin + 2}: the table differs from what "
                                f"{block.function} writes from {block.json}:\n"
                                + "\n".join(list(diff)[2:]))
    if write:
        path.write_text("\n".join(lines), encoding="utf-8")
    for problem in problems:
        print(problem, file=out)
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("markdown", nargs="*", type=Path, default=[RESULTS])
    parser.add_argument("--write", action="store_true", help="rewrite the tables from their JSON")
    args = parser.parse_args(argv)
    problems = []
    try:
        for path in args.markdown:
            problems += check(path, args.write)
    except TableError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
