"""The library behind ``fairseq-tree-preprocess``: binarise (bracketed source tree, target text)
pairs, or source trees alone, into a folder of fairseq datasets.

``PreprocessOptions`` holds what the command line's flags say (named as fairseq-preprocess
names them); ``preprocess(options)`` does the work and returns the summary it logs. The files
written are named as fairseq-preprocess names its own (``dict.{lang}.txt``,
``{split}.{src}-{tgt}.{lang}``; with ``only_source`` and no language ``dict.txt`` and
``{split}``), each source prefix with the tree datasets of ``tree_files`` beside it.

Everything is written into a hidden temporary folder first and moved into place only when every
split has succeeded, so a failed or interrupted run leaves nothing that looks like valid output,
and no folder that it made (a destination that was there is left as it was).
"""

import argparse
import dataclasses
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

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
    source_leaves,
)
from fairseq_tree.data.dependency_heads import write_dependency_heads
from fairseq_tree.data.label_dictionary import class_symbols
from fairseq_tree.data.node_targets import load_node_targets
from fairseq_tree.data.output_tree import OutputTree
from fairseq_tree.data.tree_files import node_targets_dictionary

logger = logging.getLogger(__name__)

TMP_NAME = ".fairseq-tree-preprocess.tmp"


@dataclass
class PreprocessOptions:
    """What to binarise, and how: fairseq-preprocess's options that fairseq-tree-preprocess
    reads, under their names, and its own (``leaf_tags`` .. ``no_target_label``)."""

    destdir: str
    trainpref: Optional[str] = None
    validpref: Optional[str] = None  # several: comma-separated, as fairseq's
    testpref: Optional[str] = None
    source_lang: Optional[str] = None
    target_lang: Optional[str] = None
    only_source: bool = False  # source trees alone (no target side)
    srcdict: Optional[str] = None
    tgtdict: Optional[str] = None
    joined_dictionary: bool = False
    thresholdsrc: int = 0
    thresholdtgt: int = 0
    nwordssrc: int = -1
    nwordstgt: int = -1
    padding_factor: int = 8
    dict_only: bool = False
    workers: int = 1
    skip_invalid: bool = False  # skip bad line pairs (counted) instead of stopping
    leaf_tags: bool = False  # also write the leaves' POS tags
    dependency_heads: Optional[str] = None  # read heads from {pref}.SUFFIX (CoNLL-U)
    node_targets: Optional[str] = None  # the class dictionary of the trees' labels
    no_target_label: Optional[str] = None  # with node_targets: units that get no target
    target_trees: bool = False  # the target files hold bracketed trees (an OutputTree)

    @classmethod
    def from_args(cls, args: argparse.Namespace, **changes) -> "PreprocessOptions":
        """The options of a parsed fairseq-tree-preprocess command line (with ``changes``)."""
        return cls(**{**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls)},
                      **changes})


def splits_of(options) -> List[Tuple[str, str]]:
    """(split name, file prefix) pairs of ``options``' trainpref, validpref and testpref, named
    as fairseq-preprocess names them (valid, valid1, ...)."""
    splits = [("train", options.trainpref)] if options.trainpref else []
    for name, prefs in (("valid", options.validpref), ("test", options.testpref)):
        for k, pref in enumerate(prefs.split(",") if prefs else []):
            splits.append((name if k == 0 else f"{name}{k}", pref))
    return splits


def with_language(prefix: str, lang: Optional[str]) -> str:
    """fairseq-preprocess's file naming: ``prefix.lang``, or ``prefix`` without a language."""
    return f"{prefix}.{lang}" if lang else prefix


def pair_files(options: PreprocessOptions, pref: str) -> PairFiles:
    files = PairFiles(with_language(pref, options.source_lang),
                      None if options.only_source else with_language(pref, options.target_lang))
    for path in (files.src, files.tgt, heads_file(options, pref)):
        if path is not None and not os.path.isfile(path):
            raise InputError(path, None, "no such file")
    return files


def heads_file(options: PreprocessOptions, pref: str) -> Optional[str]:
    """The CoNLL-U file of a split (``dependency_heads``), or None."""
    return f"{pref}.{options.dependency_heads}" if options.dependency_heads else None


def build_dictionaries(options: PreprocessOptions, encoding: Encoding,
                       train: Optional[PairFiles]) -> Tuple[Dictionary, Optional[Dictionary]]:
    """Load the given dictionaries, or build them from the ``train`` pairs."""
    src_dict = Dictionary.load(options.srcdict) if options.srcdict else None
    tgt_dict = Dictionary.load(options.tgtdict) if options.tgtdict else None
    if options.joined_dictionary and src_dict is not None:
        return src_dict, src_dict
    if src_dict is not None and (tgt_dict is not None or options.only_source):
        return src_dict, tgt_dict

    mapper = ChunkMapper(options.workers, encoding)
    counts = count_symbols(train, mapper, options.skip_invalid)
    labels = counts.labels + counts.tags if options.leaf_tags else counts.labels
    if options.joined_dictionary:
        joined = build_dictionary(
            counts.leaves + counts.target, options.thresholdsrc, options.nwordssrc,
            options.padding_factor, always=labels + counts.target_labels,
        )
        return joined, joined
    if src_dict is None:
        src_dict = build_dictionary(
            counts.leaves, options.thresholdsrc, options.nwordssrc, options.padding_factor,
            always=labels,
        )
    if tgt_dict is None and not options.only_source:
        tgt_dict = build_dictionary(
            counts.target, options.thresholdtgt, options.nwordstgt, options.padding_factor,
            always=counts.target_labels,
        )
    return src_dict, tgt_dict


def build_encoding(options: PreprocessOptions) -> Encoding:
    """What the workers encode with (the dictionaries are added once built)."""
    encoding = Encoding(leaf_tags=options.leaf_tags,
                        output_tree=OutputTree() if options.target_trees else None)
    if options.node_targets:
        try:
            encoding.node_targets = load_node_targets(options.node_targets,
                                                      options.no_target_label)
        except ValueError as err:
            raise InputError(options.node_targets, None, str(err)) from None
    return encoding


def write_datasets(options: PreprocessOptions, workdir: str) -> List[str]:
    """Write dictionaries and datasets into ``workdir``; return the summary lines."""
    src = options.source_lang
    tgt = None if options.only_source else options.target_lang
    splits = [(name, pref, pair_files(options, pref)) for name, pref in splits_of(options)]
    train = next((files for name, _, files in splits if name == "train"), None)
    encoding = build_encoding(options)
    classes_file = os.path.join(workdir, node_targets_dictionary(src))
    encoding.src_dict, encoding.tgt_dict = build_dictionaries(options, encoding, train)
    summary = []
    for lang, dictionary in ((src, encoding.src_dict), (tgt, encoding.tgt_dict)):
        if dictionary is not None:
            dictionary.save(os.path.join(workdir, with_language("dict", lang) + ".txt"))
            summary.append(f"[{lang or 'source'}] dictionary: {len(dictionary)} types")
    if encoding.node_targets is not None:
        classes = encoding.node_targets.classes
        classes.save(classes_file)
        summary.append(f"node targets: {encoding.node_targets.num_classes} classes "
                       f"({' '.join(class_symbols(classes))})")
    if options.dict_only:
        return summary
    where = argparse.Namespace(destdir=workdir, source_lang=src, target_lang=options.target_lang,
                               only_source=options.only_source)
    for name, pref, files in splits:
        src_prefix = dataset_dest_prefix(where, name, src)
        result = binarize_split(
            name, files, src_prefix,
            None if tgt is None else dataset_dest_prefix(where, name, tgt),
            encoding, options.workers, options.skip_invalid,
        )
        summary.extend(result.lines())
        if options.dependency_heads:
            skipped = {error.lineno for error in result.skipped}
            conllu = heads_file(options, pref)
            leaves = source_leaves(files, skipped)
            written = write_dependency_heads(conllu, leaves, src_prefix)
            summary.append(f"{name}: dependency heads of {written} trees from {conllu}")
    return summary


def first_missing_folder(path: str) -> Optional[str]:
    """The outermost folder of ``path`` that does not exist yet (``path`` itself or one above
    it), or None when it exists."""
    path, missing = os.path.abspath(path), None
    while not os.path.exists(path):
        path, missing = os.path.dirname(path), path
    return missing


def preprocess(options: PreprocessOptions, log_line: Optional[str] = None) -> List[str]:
    """Binarise into ``options.destdir`` (see the module docstring); return the summary lines
    (also logged, and written to ``preprocess.log`` after ``log_line``, by default the options).
    Bad input raises ``InputError`` naming its file and line."""
    created = first_missing_folder(options.destdir)
    workdir = os.path.join(options.destdir, TMP_NAME)
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    try:
        summary = write_datasets(options, workdir)
        with open(os.path.join(workdir, "preprocess.log"), "w", encoding="utf-8") as log:
            log.write(f"{log_line or options}\n" + "\n".join(summary) + "\n")
        for name in sorted(os.listdir(workdir)):  # every split done: publish
            os.replace(os.path.join(workdir, name), os.path.join(options.destdir, name))
    except BaseException:
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    for line in summary:
        logger.info(line)
    logger.info(f"Wrote preprocessed data to {options.destdir}")
    return summary


def preprocess_folder(folder: Path, valid: Sequence[str] = ("valid",),
                      test: Sequence[str] = ("test",), **options) -> List[str]:
    """Binarise a generated data folder into ``folder/data-bin``: the pairs (``trees/NAME.src``,
    ``tok/NAME.tgt``; ``trees/NAME.tgt`` with written target trees) of train, of the ``valid``
    names and of the ``test`` names (fairseq's valid, valid1, ...; test, test1, ...), each
    linked under one prefix as the binariser wants. ``options``: more ``PreprocessOptions``
    (languages src and tgt unless given)."""
    folder = Path(folder)
    targets = "trees" if options.get("target_trees") else "tok"
    with tempfile.TemporaryDirectory(dir=folder) as links:
        for name in ("train", *valid, *test):
            os.symlink((folder / "trees" / f"{name}.src").resolve(), f"{links}/{name}.src")
            os.symlink((folder / targets / f"{name}.tgt").resolve(), f"{links}/{name}.tgt")
        return preprocess(PreprocessOptions(**{
            "destdir": str(folder / "data-bin"), "source_lang": "src", "target_lang": "tgt",
            "trainpref": f"{links}/train",
            "validpref": ",".join(f"{links}/{name}" for name in valid),
            "testpref": ",".join(f"{links}/{name}" for name in test), **options}))

