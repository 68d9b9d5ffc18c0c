"""The WSJ data of the Tree Transformer (Wang et al., EMNLP 2019), from a local Penn Treebank.

    PTB_DIR=/corpora/treebank_3/parsed/mrg/wsj bash data-prep/prepare-wsj.sh

Reads every ``wsj_SSNN.mrg`` under ``--ptb-dir`` (any depth; sections 00-24) and writes
``$DATA/wsj/``:

    text/{train,valid,test,wsj10}.txt   one sentence per line: the words of the On-LSTM protocol
                                        (leaves with a PTB word tag, so no punctuation, no
                                        -NONE- elements, no $ #), lowercased, digits -> N
    gold/{test,wsj10}.gold              the gold trees over exactly those words (POS tags kept)
    bpe/codes                           subword-nmt codes learned on text/train.txt
    units/{train,valid,test}.txt        one unit per word: its first piece (--first-piece)
    data-bin/                           stock fairseq-preprocess --only-source of units/
    recipe.json                         settings and counts

Splits (the paper's): WSJ-train = every section but 22 and 23 (the authors' code README; with
``--wsj-all``, every section: the paper's WSJ-all), valid = 22, WSJ-test = 23 (2,416 sentences),
WSJ-10 = the sentences of every section with at most 10 words (7,422).
"""

import argparse
import logging
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from fairseq_tree.data.bpe import apply_codes, learn_codes
from fairseq_tree.data.recipe import Recipe, TextSteps
from fairseq_tree.errors import CliError, FairseqTreeError
from fairseq_tree.line_files import open_output
from fairseq_tree.trees import Tree, TreeSyntaxError, format_bracketed, parse_bracketed
from fairseq_tree.trees.evaluation import PTB_WORD_TAGS

logger = logging.getLogger("wsj")
FILE_NAME = re.compile(r"wsj_(\d\d)\d\d\.mrg$", re.IGNORECASE)
SECTIONS = range(25)
VALID, TEST, WSJ10_WORDS = (22,), (23,), 10


def mrg_files(ptb_dir: Path) -> dict[int, list[Path]]:
    """The .mrg files of each section, in name order."""
    sections: dict[int, list[Path]] = {}
    for path in sorted(ptb_dir.rglob("*")):
        match = FILE_NAME.search(path.name)
        if match and path.is_file():
            sections.setdefault(int(match.group(1)), []).append(path)
    if not sections:
        raise CliError(f"PTB_DIR {ptb_dir}: no wsj_SSNN.mrg files (give the folder holding the "
                       "Penn Treebank's parsed/mrg/wsj sections)")
    return sections


def mrg_trees(path: Path) -> Iterator[tuple[str, str]]:
    """``(FILE:LINE, tree)`` for each top-level bracketed tree of a .mrg file (which spreads a
    tree over several lines); unbalanced brackets are a FILE:LINE error."""
    text = path.read_text(encoding="utf-8", errors="strict")
    depth, start = 0, None
    for match in re.finditer(r"[()]", text):
        if match.group() == "(":
            if depth == 0:
                start = match.start()
            depth += 1
        else:
            depth -= 1
            if depth < 0:
                raise CliError(f"{path}:{text.count(chr(10), 0, match.start()) + 1}: ')' closes "
                               "no bracket")
            if depth == 0:
                yield (f"{path}:{text.count(chr(10), 0, start) + 1}",
                       " ".join(text[start:match.end()].split()))
    if depth:
        raise CliError(f"{path}:{text.count(chr(10), 0, start) + 1}: tree never closed")


def normalize_word(word: str) -> str:
    """As the On-LSTM data (and the authors' WSJ text): lowercased, digit runs -> N."""
    return re.sub("[0-9]+", "N", word.lower())


def words_only(tree: Tree) -> Tree | None:
    """The tree keeping the preterminals with a PTB word tag (words normalised); phrases left
    without words disappear. None when no word is left."""
    children = []
    for child in tree.children:
        if isinstance(child, str):
            continue  # a bare token outside a preterminal: PTB has none
        if len(child.children) == 1 and isinstance(child.children[0], str):
            if child.label in PTB_WORD_TAGS:
                children.append(Tree(child.label, [normalize_word(child.children[0])]))
        elif (kept := words_only(child)) is not None:
            children.append(kept)
    return Tree(tree.label, children) if children else None


def leaves(tree: Tree) -> list[str]:
    return [c for child in tree.children
            for c in ([child] if isinstance(child, str) else leaves(child))]


def sentences(files: list[Path], stats: dict) -> Iterator[Tree]:
    """The word-only gold trees of ``files``; sentences without words are counted, not kept."""
    for path in files:
        for where, text in mrg_trees(path):
            try:
                tree = words_only(parse_bracketed(text))
            except TreeSyntaxError as err:
                raise CliError(f"{where}: malformed tree: {err}") from None
            if tree is None:
                stats["sentences without words"] = stats.get("sentences without words", 0) + 1
            else:
                yield tree


def write_lines(path: Path, lines: list[str]):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open_output(str(path)) as sink:
        sink.write("".join(line + "\n" for line in lines).encode("utf-8"))


def write_splits(args, work: Path, sections: dict[int, list[Path]], stats: dict) -> dict:
    """text/ and gold/; the number of sentences of each split."""
    trees = {s: list(sentences(sections.get(s, []), stats)) for s in SECTIONS}
    missing = [f"{s:02d}" for s in (*VALID, *TEST) if not trees[s]]
    if missing:
        raise CliError(f"PTB_DIR {args.ptb_dir}: no sentences in section(s) {', '.join(missing)}")
    held_out = () if args.wsj_all else (*VALID, *TEST)
    splits = {"train": [t for s in SECTIONS if s not in held_out for t in trees[s]],
              "valid": [t for s in VALID for t in trees[s]],
              "test": [t for s in TEST for t in trees[s]],
              "wsj10": [t for s in SECTIONS for t in trees[s] if len(leaves(t)) <= WSJ10_WORDS]}
    for split, kept in splits.items():
        write_lines(work / "text" / f"{split}.txt", [" ".join(leaves(t)) for t in kept])
        if split in ("test", "wsj10"):
            write_lines(work / "gold" / f"{split}.gold", [format_bracketed(t) for t in kept])
    return {split: len(kept) for split, kept in splits.items()}


def write_units(args, work: Path):
    """bpe/codes (learned on the training text) and units/: each word as its first piece."""
    codes = work / "bpe" / "codes"
    codes.parent.mkdir(parents=True, exist_ok=True)
    learn_codes(str(codes), args.bpe_merges, text=[str(work / "text" / "train.txt")])
    (work / "units").mkdir(exist_ok=True)
    for split in ("train", "valid", "test"):
        stats = apply_codes(str(codes), str(work / "text" / f"{split}.txt"),
                            str(work / "units" / f"{split}.txt"), text=True, first_piece=True)
        print(stats.report(), file=sys.stderr)


def binarize(args, work: Path):
    """Stock fairseq-preprocess --only-source; units seen once become <unk> (as the authors'
    vocabulary keeps pieces seen more than once)."""
    units = work / "units"
    cmd = [str(Path(sys.executable).parent / "fairseq-preprocess"), "--only-source",
           "--trainpref", str(units / "train.txt"), "--validpref", str(units / "valid.txt"),
           "--testpref", str(units / "test.txt"), "--destdir", str(work / "data-bin"),
           "--thresholdsrc", "2", "--workers", str(args.workers)]
    if subprocess.run(cmd, check=False).returncode != 0:
        raise CliError("fairseq-preprocess failed")


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ptb-dir", required=True, type=Path, help="the Penn Treebank's WSJ .mrg")
    parser.add_argument("--data", default="data", type=Path, help="output root (default: data)")
    parser.add_argument("--wsj-all", action="store_true",
                        help="train on every section, test and valid included (WSJ-all)")
    parser.add_argument("--bpe-merges", type=int, default=16000,
                        help="subword-nmt merges (default 16000: the paper's 16k WordPiece)")
    parser.add_argument("--workers", type=int, default=1)
    return parser


def main(argv=None):
    logging.basicConfig(format="%(asctime)s | %(levelname)s | wsj | %(message)s",
                        level=logging.INFO, stream=sys.stderr)
    args = get_parser().parse_args(argv)
    work = args.data / ("wsj-all" if args.wsj_all else "wsj")
    try:
        stats: dict = {}
        sizes = write_splits(args, work, mrg_files(args.ptb_dir), stats)
        logger.info(f"sentences: {sizes} ({stats or 'all with words'})")
        write_units(args, work)
        binarize(args, work)
    except (FairseqTreeError, OSError, UnicodeDecodeError) as err:  # CliError is one
        sys.exit(f"wsj.py: error: {err}")
    Recipe("treebank", TextSteps(tokenize="none", bpe_codes="bpe/codes"), details={
        "ptb_dir": str(args.ptb_dir), "wsj_all": args.wsj_all, "bpe_merges": args.bpe_merges,
        "sizes": sizes, "stats": stats}).write(work)


if __name__ == "__main__":
    main()
