"""The steps that every data recipe shares (prepare.py for translation pairs,
prepare_classification.py for classification data): settings, parsing, BPE, skipping what is done.
"""

import json
import logging
import shutil
import sys
from pathlib import Path

import corpora
import textprep
from corpora import Archive, CliError

from fairseq_tree.cli import bpe as tree_bpe
from fairseq_tree.cli import parse as tree_parse
from fairseq_tree.cli import preprocess as tree_preprocess

logger = corpora.logger


def check_settings(work: Path, settings: dict):
    """Record a recipe's settings in ``work/settings.json``; refuse to continue outputs made
    with other settings."""
    path = work / "settings.json"
    if path.exists():
        old = json.loads(path.read_text(encoding="utf-8"))
        changed = sorted(key for key in settings if old.get(key) != settings[key])
        if changed:
            raise CliError(f"{path}: {work} was made with other settings "
                           f"({', '.join(changed)}); delete it to rebuild")
        return
    work.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")


def parse_file(source: Path, trees: Path, args, lang: str):
    """fairseq-tree-parse ``source`` (one tokenized sentence per line) into ``trees`` with the
    recipe's parser settings; resumes a partial output, skips a complete one."""
    if trees.exists() and textprep.count_lines(trees) == textprep.count_lines(source):
        logger.info(f"{trees}: parsed already, skipping")
        return
    trees.parent.mkdir(parents=True, exist_ok=True)
    workers = args.parse_workers or (1 if args.parser == "stanza" else args.workers)
    tree_parse.cli_main(["--parser", args.parser, "--lang", lang, "--input", str(source),
                         "--output", str(trees), "--workers", str(workers), *args.parser_arg])
    configure_logging()  # the parser's entry point configured its own


def learn_bpe(codes: Path, merges: int, inputs: list[str]):
    """Joint subword-nmt codes (fairseq-tree-bpe learn) on ``inputs`` (its --trees/--text)."""
    if done([codes], "BPE codes"):
        return
    codes.parent.mkdir(parents=True, exist_ok=True)
    tree_bpe.learn(tree_bpe.get_parser().parse_args(
        ["learn", "--method", "subword-nmt", "--symbols", str(merges), *inputs,
         "--output", str(codes)]))


def apply_bpe(codes: Path, source: Path, output: Path, text: bool = False):
    """fairseq-tree-bpe apply: BPE on the leaves of trees (or on ``text``)."""
    tree_bpe.apply(tree_bpe.get_parser().parse_args(
        ["apply", "--codes", str(codes), "--input", str(source), "--output", str(output),
         *(["--text"] if text else [])]))


def archives(args) -> dict[str, Archive]:
    """The ``--archive`` and ``--inside`` settings, by archive file name."""
    found = {}
    for spec in args.archive:
        name, _, url = spec.partition("=")
        found[name] = Archive(name, url or None)
    for spec in args.inside:
        name, _, where = spec.partition("=")
        release, _, member = where.partition(":")
        if name not in found or release not in found or not member:
            raise CliError(f"--inside {spec}: expected NAME=RELEASE:MEMBER of two --archive names")
        found[name].parent, found[name].member = found[release], member
    return found


def done(paths, what: str) -> bool:
    """True (and say so) when every output of a step exists: the step is skipped."""
    if all(Path(path).exists() for path in paths):
        logger.info(f"{what}: done already, skipping")
        return True
    return False


def mkdirs(paths):
    for path in paths:
        Path(path).parent.mkdir(parents=True, exist_ok=True)


def configure_logging():
    logging.basicConfig(format="%(asctime)s | %(levelname)s | prepare | %(message)s",
                        level=logging.INFO, stream=sys.stderr, force=True)


def write_classes(path: Path, count: int):
    """A class dictionary in class order: lines ``0 1``, ``1 1``, ..."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k} 1\n" for k in range(count)), encoding="utf-8")


def binarize_classification(folder: Path, dest: Path, node_targets: bool, workers: int,
                            pairs: bool = False, scores: int = 0):
    """fairseq's sentence_prediction layout of the files {split} (trees) and {split}.label in
    ``folder``: input0/ by fairseq-tree-preprocess (--node-targets node-classes.txt), label/ by
    fairseq-preprocess with classes.txt. ``pairs``: {split}.input1 (the second trees) into
    input1/ with input0's dictionary. ``scores``: the labels are distributions over 1..K, copied
    as label/{split}.label (fairseq's --regression-target layout)."""
    from fairseq import options
    from fairseq_cli import preprocess as fairseq_preprocess

    splits = ("train", "valid", "test")
    prefs = lambda suffix: [arg for split in splits
                            for arg in (f"--{split}pref", str(folder / f"{split}{suffix}"))]
    tree_preprocess.cli_main(["--only-source", *prefs(""), "--destdir", str(dest / "input0"),
                              "--workers", str(workers),
                              *(["--node-targets", str(folder / "node-classes.txt")]
                                if node_targets else [])])
    if pairs:
        tree_preprocess.cli_main(["--only-source", *prefs(".input1"), "--destdir",
                                  str(dest / "input1"), "--srcdict",
                                  str(dest / "input0" / "dict.txt"), "--workers", str(workers)])
    if scores:
        (dest / "label").mkdir(parents=True, exist_ok=True)
        for split in splits:
            shutil.copyfile(folder / f"{split}.label", dest / "label" / f"{split}.label")
        return
    labels = options.get_preprocessing_parser().parse_args(
        ["--only-source", *prefs(".label"), "--destdir", str(dest / "label"),
         "--srcdict", str(folder / "classes.txt"), "--workers", "1"])
    fairseq_preprocess.main(labels)
