"""The data-bin a benchmark runs on: the one given (``--data``), or the Bible sample of
tests/data/bible made into one as scripts/example.sh makes it (BPE and binarized by the
package's own functions)."""

import argparse
import os
import sys
from pathlib import Path

from fairseq_tree.data.bpe import apply_codes, learn_codes
from fairseq_tree.data.preprocess import PreprocessOptions, preprocess

BIBLE = Path(__file__).resolve().parents[2] / "tests" / "data" / "bible"


def build_data_bin(work: str, symbols: int) -> str:
    """The Bible sample (English trees -> French), joint BPE and binarized into ``work`` with
    scripts/example.sh's steps and flags (one worker; train and test only), by the package's
    BPE and binarising functions; returns the data-bin folder."""
    codes = os.path.join(work, "codes")
    learn_codes(codes, symbols, trees=[str(BIBLE / "train.en")], text=[str(BIBLE / "train.fr")])
    for split in ("train", "test"):
        for side, text in (("en", False), ("fr", True)):
            stats = apply_codes(codes, str(BIBLE / f"{split}.{side}"),
                                os.path.join(work, f"{split}.{side}"), text=text)
            print(stats.report(), file=sys.stderr)
    destdir = os.path.join(work, "data-bin")
    preprocess(PreprocessOptions(destdir, source_lang="en", target_lang="fr",
                                 joined_dictionary=True, trainpref=os.path.join(work, "train"),
                                 testpref=os.path.join(work, "test")))
    return destdir


def data_bin_parser(description: str) -> argparse.ArgumentParser:
    """A parser with the options of the benchmarks on a data-bin: ``--data``, or the Bible
    sample binarized by ``build_data_bin`` with ``--bpe-symbols`` merges."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", help="a data-bin of fairseq-tree-preprocess (default: the Bible "
                        "sample of tests/data/bible, BPE'd and binarized into a temporary folder)")
    parser.add_argument("--bpe-symbols", type=int, default=2000,
                        help="BPE merges of the data-bin built without --data")
    return parser
