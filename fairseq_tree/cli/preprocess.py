"""fairseq-tree-preprocess: binarise (bracketed source tree, target text) pairs for fairseq.

Flags and meaning follow ``fairseq-preprocess``. Source files ``{pref}.{src}`` hold one BPE'd
bracketed tree per line, target files ``{pref}.{tgt}`` the BPE'd target text. Output, in
``--destdir``: ``dict.{src}.txt``, ``dict.{tgt}.txt`` and per split the mmap datasets
``{split}.{src}-{tgt}.{src}`` (leaves + EOS, a stock fairseq source), ``... .{src}.labels`` (node
labels), ``... .{src}.spans`` (node spans) and ``{split}.{src}-{tgt}.{tgt}`` (stock target);
on request also ``... .{src}.tags`` (``--leaf-tags``: the leaves' POS tags) and ``... .{src}.heads``
(``--dependency-heads SUFFIX``: the leaves' dependency heads from ``{pref}.SUFFIX``, CoNLL-U).

``--only-source`` binarises trees alone, named as ``fairseq-preprocess --only-source`` names its
files (without ``--source-lang``: ``{pref}`` in, ``dict.txt`` and ``{split}`` out, the ``input0/``
of fairseq's ``sentence_prediction``). ``--node-targets DICT`` reads the trees' node and word
labels as classes of DICT and writes them as ``{split}.node_targets`` (see
``fairseq_tree.data.node_targets``), with DICT copied to ``dict.node_targets.txt`` beside
``dict.txt`` (``dict.{src}.node_targets.txt`` with a language).

Everything is written into a hidden temporary folder first and moved into place only when every
split has succeeded, so a failed or interrupted run leaves nothing that looks like valid output.
"""

import argparse
import logging
import os
import shutil
import sys
from typing import List, Optional, Tuple

from fairseq import options
from fairseq.data import Dictionary
from fairseq_cli.preprocess import dataset_dest_prefix

from fairseq_tree.data.binarize import (
    ChunkMapper,
    Encoding,
    InputError,
    PairFiles,
    binarize_split,
    build_dictionary,
    count_symbols,
)
from fairseq_tree.data.dependency_heads import source_leaves, write_dependency_heads
from fairseq_tree.data.label_dictionary import class_symbols
from fairseq_tree.data.node_targets import load_node_targets

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
        help="also write the leaves' POS tags as {split}.{src}-{tgt}.{src}.tags ({split}.tags "
        "with --only-source; the source "
        "dictionary ids of [TAG], aligned with the leaves and EOS; pad where a leaf has no tag, "
        "e.g. a subword piece, and at EOS); the tags join the source dictionary as node labels do",
    )
    group.add_argument(
        "--dependency-heads", metavar="SUFFIX",
        help="read each split's dependency heads from {pref}.SUFFIX (CoNLL-U, one sentence per "
        "source line, its tokens exactly the tree's leaves) and write them as "
        "{split}.{src}-{tgt}.{src}.heads ({split}.heads with --only-source; per leaf, the "
        "0-based index of its head, -1 at the root)",
    )
    group.add_argument(
        "--node-targets", metavar="DICT",
        help="with --only-source: the trees' node labels and preterminal tags are classes of "
        "this dictionary file (e.g. label/dict.txt); write them as per-leaf and per-node "
        "targets ({split}.node_targets) and give every node of the model's input one label",
    )
    group.add_argument(
        "--no-target-label", metavar="LABEL",
        help="with --node-targets: leaves and nodes labelled LABEL get no target (e.g. the "
        "neutral phrases of a 2-class SST)",
    )
    return parser


def check_args(parser, args):
    unsupported = [("--align-suffix", args.align_suffix), ("--alignfile", args.alignfile)]
    for flag, value in unsupported:
        if value:
            parser.error(f"{flag} is not supported by fairseq-tree-preprocess")
    if args.dataset_impl != "mmap":
        parser.error("fairseq-tree-preprocess writes --dataset-impl mmap only")
    if args.only_source:
        if args.joined_dictionary or args.tgtdict:
            parser.error("--only-source binarizes source trees alone: no --joined-dictionary "
                         "or --tgtdict")
    elif not args.source_lang or not args.target_lang:
        parser.error("--source-lang and --target-lang are required (or --only-source)")
    if args.node_targets and not args.only_source:
        parser.error("--node-targets needs --only-source (trees whose labels are classes)")
    if args.node_targets and args.leaf_tags:
        parser.error("--leaf-tags with --node-targets: the trees' word labels are classes "
                     "(targets), not POS tags")
    if args.no_target_label and not args.node_targets:
        parser.error("--no-target-label needs --node-targets")
    if args.node_targets and not os.path.isfile(args.node_targets):
        parser.error(f"--node-targets {args.node_targets}: no such class dictionary file")
    if args.joined_dictionary and args.tgtdict and args.srcdict != args.tgtdict:
        parser.error("--joined-dictionary takes one dictionary: give --srcdict only")
    has_dicts = args.srcdict and (args.only_source or args.tgtdict or args.joined_dictionary)
    if not has_dicts and not args.trainpref:
        parser.error("--trainpref is required to build a dictionary (or give --srcdict/--tgtdict)")


def splits_of(args) -> List[Tuple[str, str]]:
    """(split name, file prefix) pairs, named as fairseq-preprocess names them."""
    splits = [("train", args.trainpref)] if args.trainpref else []
    for name, prefs in (("valid", args.validpref), ("test", args.testpref)):
        for k, pref in enumerate((prefs or "").split(",") if prefs else []):
            splits.append((name if k == 0 else f"{name}{k}", pref))
    return splits


def with_language(prefix: str, lang: Optional[str]) -> str:
    """fairseq-preprocess's file naming: ``prefix.lang``, or ``prefix`` without a language."""
    return f"{prefix}.{lang}" if lang else prefix


def pair_files(args, pref: str) -> PairFiles:
    files = PairFiles(with_language(pref, args.source_lang),
                      None if args.only_source else with_language(pref, args.target_lang))
    for path in (files.src, files.tgt, heads_file(args, pref)):
        if path is not None and not os.path.isfile(path):
            raise InputError(path, None, "no such file")
    return files


def heads_file(args, pref: str) -> Optional[str]:
    """The CoNLL-U file of a split (``--dependency-heads``), or None."""
    return f"{pref}.{args.dependency_heads}" if args.dependency_heads else None


def build_dictionaries(args, encoding: Encoding) -> Tuple[Dictionary, Optional[Dictionary]]:
    """Load the given dictionaries, or build them from the training pairs."""
    src_dict = Dictionary.load(args.srcdict) if args.srcdict else None
    tgt_dict = Dictionary.load(args.tgtdict) if args.tgtdict else None
    if args.joined_dictionary and src_dict is not None:
        return src_dict, src_dict
    if src_dict is not None and (tgt_dict is not None or args.only_source):
        return src_dict, tgt_dict

    mapper = ChunkMapper(args.workers, encoding)
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
    if tgt_dict is None and not args.only_source:
        tgt_dict = build_dictionary(
            counts.target, args.thresholdtgt, args.nwordstgt, args.padding_factor
        )
    return src_dict, tgt_dict


def build_encoding(args) -> Encoding:
    """What the workers encode with (the dictionaries are added once built)."""
    if not args.node_targets:
        return Encoding(leaf_tags=args.leaf_tags)
    try:
        node_targets = load_node_targets(args.node_targets, args.no_target_label)
    except ValueError as err:
        raise InputError(args.node_targets, None, str(err)) from None
    return Encoding(node_targets=node_targets, leaf_tags=args.leaf_tags)


def preprocess(args, workdir: str) -> List[str]:
    """Write dictionaries and datasets into ``workdir``; return the summary lines."""
    src, tgt = args.source_lang, None if args.only_source else args.target_lang
    splits = [(name, pref, pair_files(args, pref)) for name, pref in splits_of(args)]
    encoding = build_encoding(args)
    encoding.src_dict, encoding.tgt_dict = build_dictionaries(args, encoding)
    summary = []
    for lang, dictionary in ((src, encoding.src_dict), (tgt, encoding.tgt_dict)):
        if dictionary is not None:
            dictionary.save(os.path.join(workdir, with_language("dict", lang) + ".txt"))
            summary.append(f"[{lang or 'source'}] dictionary: {len(dictionary)} types")
    if encoding.node_targets is not None:
        classes = encoding.node_targets.classes
        classes.save(os.path.join(workdir, with_language("dict", src) + ".node_targets.txt"))
        summary.append(f"node targets: {encoding.node_targets.num_classes} classes "
                       f"({' '.join(class_symbols(classes))})")
    if args.dict_only:
        return summary
    where = argparse.Namespace(**{**vars(args), "destdir": workdir})
    for name, pref, files in splits:
        src_prefix = dataset_dest_prefix(where, name, src)
        result = binarize_split(
            name, files, src_prefix,
            None if tgt is None else dataset_dest_prefix(where, name, tgt),
            encoding, args.workers, args.skip_invalid,
        )
        summary.extend(result.lines())
        if args.dependency_heads:
            skipped = {error.lineno for error in result.skipped}
            conllu = heads_file(args, pref)
            written = write_dependency_heads(conllu, source_leaves(files, skipped), src_prefix)
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
