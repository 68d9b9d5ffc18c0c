"""The questions' ``NAME=VALUE`` options (``--checkpoint MODEL:SEED=PATH``, ``--results
NAME=REPORT``, ...), read as (name, value) pairs."""

import argparse


def named_values(parser: argparse.ArgumentParser, option: str, form: str,
                 specs: list[str]) -> list[tuple[str, str]]:
    """(NAME, VALUE) of each of ``specs``, the values given ``option``; one without a name, an
    ``=`` or a value is the parser's usage error, which says it expected ``form``."""
    pairs = [spec.partition("=") for spec in specs]
    for spec, (name, sep, value) in zip(specs, pairs):
        if not sep or not name or not value:
            parser.error(f"{option} {spec!r}: expected {form}")
    return [(name, value) for name, _, value in pairs]
