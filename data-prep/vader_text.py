"""English text of other domains, one snippet a line, from the four ground-truth corpora of VADER
(Hutto & Gilbert, ICWSM 2014; the `vadersentiment` 3.3.2 sdist on PyPI, MIT): for the agreement
recipe's TEST_TEXT, a test of a domain the Bible is not.

    python data-prep/vader_text.py movie runs/rt-snippets.txt      # 10,605 Rotten Tomatoes snippets
    python data-prep/vader_text.py nyt runs/nyt-editorials.txt     # 5,190 New York Times editorials
    DATA=runs/data TEST_TEXT=runs/rt-snippets.txt bash data-prep/prepare-agreement.sh

Corpora: ``movie`` (Rotten Tomatoes snippets, the rt-snippets recipe's), ``nyt`` (New York
Times editorial snippets), ``amazon`` (Amazon review snippets), ``tweets``. Each line of a
ground-truth file is ``ID <TAB> RATING <TAB> TEXT``; the text is written as it is (several
sentences stay on one line: the recipe's spaCy parse splits them). The sdist is fetched with
`pip download` into ``$DATA/orig/vadersentiment`` (DATA default: data), or read from
``--local-dir``, as the rt-snippets recipe does.
"""

import argparse
import os
import sys
from pathlib import Path

import corpora
from corpora import Archive, CliError, Sources

SDIST = "vaderSentiment-3.3.2.tar.gz"
INNER = "hutto_ICWSM_2014.tar.gz"
CORPORA = {"movie": "movieReviewSnippets", "nyt": "nytEditorialSnippets",
           "amazon": "amazonReviewSnippets", "tweets": "tweets"}


def snippets(path: Path):
    """(FILE:LINE, text) of every ground-truth line; a malformed line is one error naming it."""
    for where, line in corpora.text_lines(path):
        parts = line.split("\t")
        if len(parts) != 3 or not parts[2].strip():
            raise CliError(f"{where}: expected ID<TAB>RATING<TAB>TEXT")
        yield where, " ".join(parts[2].split())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", choices=sorted(CORPORA))
    parser.add_argument("output", type=Path)
    parser.add_argument("--data", default=os.environ.get("DATA", "data"),
                        help="the recipes' output root: downloads go to DATA/orig/vadersentiment")
    parser.add_argument("--local-dir", default="", metavar="DIR",
                        help="a folder holding the sdist or its extracted files")
    args = parser.parse_args(argv)
    sdist = Archive(SDIST, pip="vadersentiment==3.3.2")
    inner = Archive(INNER, parent=sdist,
                    member=f"vaderSentiment-3.3.2/additional_resources/{INNER}")
    sources = Sources(Path(args.data) / "orig" / "vadersentiment", args.local_dir)
    try:
        path = sources.file(f"hutto_ICWSM_2014/{CORPORA[args.corpus]}_GroundTruth.txt", inner)
        lines = [text for _, text in snippets(path)]
    except CliError as err:
        sys.exit(f"vader_text.py: error: {err}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text("".join(text + "\n" for text in lines), encoding="utf-8")
    print(f"vader_text.py: {len(lines):,} {args.corpus} snippets from {path} -> {args.output}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
