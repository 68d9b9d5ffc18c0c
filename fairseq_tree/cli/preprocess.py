"""fairseq-tree-preprocess: binarise (bracketed source tree, target text) pairs for fairseq.

Flags and meaning follow ``fairseq-preprocess``. Source files ``{pref}.{src}`` hold one BPE'd
bracketed tree per line, target files ``{pref}.{tgt}`` the BPE'd target text. Output, in
``--destdir``: ``dict.{src}.txt``, ``dict.{tgt}.txt`` and per split the mmap datasets
``{split}.{src}-{tgt}.{src}`` (leaves + EOS, a stock fairseq source), ``... .{src}.labels`` (node
labels), ``... .{src}.spans`` (node spans) and ``{split}.{src}-{tgt}.{tgt}`` (stock target);
on request also ``... .{src}.tags`` (``--leaf-tags``: the leaves' POS tags) and ``... .{src}.heads``
(``--dependency-heads SUFFIX``: the leaves' dependency heads from ``{pref}.SUFFIX``, CoNLL-U).

Everything is written into a hidden temporary folder first and moved into place only when every
split has succeeded, so a failed or interrupted run leaves nothing that looks like valid output.
"""

import logging
import os
import shutil
import sys
from typing import List, Tuple

from fairseq import options
from fairseq.data import Dictionary

from fairseq_tree.data.binarize import (
    ChunkMapper,
    InputError,
    PairFiles,
    binarize_split,
    build_dictionary,
    count_symbols,
)
from fairseq_tree.data.dependency_heads import source_leaves, write_dependency_heads

logger = logging.getLogger("fairseq_tree.cli.preprocess")

TMP_NAME = ".fairseq-tree-preprocess.tmp"


def get_parser():
    parser = options.get_preprocessing_parser()
    group = parser.add_argument_group("Trees")
    group.add_argument(
        "--skip-invalid", action="store_true",
        help="skip line pairs whose source tree is malformed or whose source or target line is "
        "empty (both sides together), count them and report them in the summary, instead of "
        "stopping at the first one",
    )
    group.add_argument(
        "--leaf-tags", action="store_true",
        help="also write the leaves' POS tags as {split}.{src}-{tgt}.{src}.tags (the source "
        "dictionary ids of [TAG], aligned with the leaves and EOS; pad where a leaf has no tag, "
        "e.g. a subword piece, and at EOS); the tags join the source dictionary as node labels do",
    )
    group.add_argument(
        "--dependency-heads", metavar="SUFFIX",
        help="read each split's dependency heads from {pref}.SUFFIX (CoNLL-U, one sentence per "
        "source line, its tokens exactly the tree's leaves) and write them as "
        "{split}.{src}-{tgt}.{src}.heads (per leaf, the 0-based index of its head, -1 at the root)",
    )
    return parser


def check_args(parser, args):
    unsupported = [
        ("--only-source", args.only_source), ("--align-suffix", args.align_suffix),
        ("--alignfile", args.alignfile),
    ]
    for flag, value in unsupported:
        if value:
            parser.error(f"{flag} is not supported by fairseq-tree-preprocess")
    if args.dataset_impl != "mmap":
        parser.error("fairseq-tree-preprocess writes --dataset-impl mmap only")
    if not args.source_lang or not args.target_lang:
        parser.error("--source-lang and --target-lang are required")
    if args.joined_dictionary and args.tgtdict and args.srcdict != args.tgtdict:
        parser.error("--joined-dictionary takes one dictionary: give --srcdict only")
    needs_train = not args.srcdict or not (args.tgtdict or args.joined_dictionary)
    if needs_train and not args.trainpref:
        parser.error("--trainpref is required to build a dictionary (or give --srcdict/--tgtdict)")


def splits_of(args) -> List[Tuple[str, str]]:
    """(split name, file prefix) pairs, named as fairseq-preprocess names them."""
    splits = [("train", args.trainpref)] if args.trainpref else []
    for name, prefs in (("valid", args.validpref), ("test", args.testpref)):
        for k, pref in enumerate((prefs or "").split(",") if prefs else []):
            splits.append((name if k == 0 else f"{name}{k}", pref))
    return splits


def pair_files(args, pref: str) -> PairFiles:
    files = PairFiles(f"{pref}.{args.source_lang}", f"{pref}.{args.target_lang}")
    for path in (files.src, files.tgt, heads_file(args, pref)):
        if path is not None and not os.path.isfile(path):
            raise InputError(path, None, "no such file")
    return files


def heads_file(args, pref: str):
    """The CoNLL-U file of a split (``--dependency-heads``), or None."""
    return f"{pref}.{args.dependency_heads}" if args.dependency_heads else None


def build_dictionaries(args) -> Tuple[Dictionary, Dictionary]:
    """Load the given dictionaries, or build them from the training pairs."""
    src_dict = Dictionary.load(args.srcdict) if args.srcdict else None
    tgt_dict = Dictionary.load(args.tgtdict) if args.tgtdict else None
    if args.joined_dictionary and src_dict is not None:
        return src_dict, src_dict
    if src_dict is not None and tgt_dict is not None:
        return src_dict, tgt_dict

    mapper = ChunkMapper(args.workers)
    counts = count_symbols(pair_files(args, args.trainpref), mapper, args.skip_invalid)
    labels = counts.labels + counts.tags if args.leaf_tags else counts.labels
    if args.joined_dictionary:
        joined = build_dictionary(
            counts.leaves + counts.target, args.thresholdsrc, args.nwordssrc,
            args.padding_factor, always=labels,
        )
        return joined, joined
    if src_dict is None:
        src_dict = build_dictionary(
            counts.leaves, args.thresholdsrc, args.nwordssrc, args.padding_factor,
            always=labels,
        )
    if tgt_dict is None:
        tgt_dict = build_dictionary(
            counts.target, args.thresholdtgt, args.nwordstgt, args.padding_factor
        )
    return src_dict, tgt_dict


def preprocess(args, workdir: str) -> List[str]:
    """Write dictionaries and datasets into ``workdir``; return the summary lines."""
    src, tgt = args.source_lang, args.target_lang
    splits = [(name, pref, pair_files(args, pref)) for name, pref in splits_of(args)]
    src_dict, tgt_dict = build_dictionaries(args)
    src_dict.save(os.path.join(workdir, f"dict.{src}.txt"))
    tgt_dict.save(os.path.join(workdir, f"dict.{tgt}.txt"))
    summary = [
        f"[{src}] dictionary: {len(src_dict)} types",
        f"[{tgt}] dictionary: {len(tgt_dict)} types",
    ]
    if args.dict_only:
        return summary
    for name, pref, files in splits:
        prefix = os.path.join(workdir, f"{name}.{src}-{tgt}.")
        result = binarize_split(
            name, files, prefix + src, prefix + tgt, src_dict, tgt_dict,
            args.workers, args.skip_invalid, args.leaf_tags,
        )
        summary.extend(result.lines())
        if args.dependency_heads:
            skipped = {error.lineno for error in result.skipped}
            conllu = heads_file(args, pref)
            written = write_dependency_heads(conllu, source_leaves(files, skipped), prefix + src)
            summary.append(f"{name}: dependency heads of {written} trees from {conllu}")
    return summary


def publish(workdir: str, destdir: str):
    """Move every finished output file from ``workdir`` into ``destdir``."""
    for name in sorted(os.listdir(workdir)):
        os.replace(os.path.join(workdir, name), os.path.join(destdir, name))
    os.rmdir(workdir)


def main(args):
    os.makedirs(args.destdir, exist_ok=True)
    workdir = os.path.join(args.destdir, TMP_NAME)
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    try:
        summary = preprocess(args, workdir)
        with open(os.path.join(workdir, "preprocess.log"), "w", encoding="utf-8") as log:
            log.write(f"{args}\n" + "\n".join(summary) + "\n")
        publish(workdir, args.destdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    for line in summary:
        logger.info(line)
    logger.info(f"Wrote preprocessed data to {args.destdir}")


def cli_main(argv=None):
    logging.basicConfig(
        format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
        level=os.environ.get("LOGLEVEL", "INFO").upper(),
        stream=sys.stdout,
        force=True,  # importing fairseq may already have configured the root logger
    )
    parser = get_parser()
    args = parser.parse_args(argv)
    check_args(parser, args)
    try:
        main(args)
    except InputError as err:
        sys.exit(f"fairseq-tree-preprocess: error: {err}")


if __name__ == "__main__":
    cli_main()
