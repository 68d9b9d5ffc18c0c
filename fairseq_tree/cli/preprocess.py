"""fairseq-tree-preprocess: binarise (bracketed source tree, target text) pairs for fairseq, or
trees with labels for the ``tree_classification`` task.

Flags and meaning follow ``fairseq-preprocess``. Source files ``{pref}.{src}`` hold one BPE'd
bracketed tree per line, target files ``{pref}.{tgt}`` the BPE'd target text. Output, in
``--destdir``: ``dict.{src}.txt``, ``dict.{tgt}.txt`` and per split the mmap datasets
``{split}.{src}-{tgt}.{src}`` (leaves + EOS, a stock fairseq source), ``... .{src}.labels`` (node
labels), ``... .{src}.spans`` (node spans) and ``{split}.{src}-{tgt}.{tgt}`` (stock target);
on request also ``... .{src}.tags`` (``--leaf-tags``: the leaves' POS tags) and ``... .{src}.heads``
(``--dependency-heads SUFFIX``: the leaves' dependency heads from ``{pref}.SUFFIX``, CoNLL-U).
``--target-trees``: the target files hold bracketed trees too, one a line; their leaves are the
stock target, their labels and spans ``... .{tgt}.labels`` and ``... .{tgt}.spans`` (what
``tree_translation --target-trees`` trains the decoder to write).
The suffixes are those of ``fairseq_tree.data.tree_files``.

``--only-source`` binarises trees alone, named as ``fairseq-preprocess --only-source`` names its
files (without ``--source-lang``: ``{pref}`` in, ``dict.txt`` and ``{split}`` out, the ``input0/``
of fairseq's ``sentence_prediction``). ``--node-targets DICT`` reads the trees' node and word
labels as classes of DICT and writes them as ``{split}.node_targets`` (see
``fairseq_tree.data.node_targets``), with DICT copied to ``dict.node_targets.txt`` beside
``dict.txt`` (``dict.{src}.node_targets.txt`` with a language).

``--task tree_classification`` makes the whole layout of the ``tree_classification`` task (see
``fairseq_tree.data.classification_layout``) from ``{pref}.input0`` (trees), ``{pref}.input1``
(the second trees of pairs, if the first split has them) and ``{pref}.label`` (one label per
line) of each split::

    fairseq-tree-preprocess --task tree_classification --trainpref raw/train \
        --validpref raw/valid --testpref raw/test --destdir data-bin/sst \
        [--label-dict classes.txt] [--node-targets node-classes.txt] [--regression-target]

writes ``input0/`` and ``input1/`` (the trees, as ``--only-source`` writes them, input1 with
input0's dictionary) and ``label/`` (as ``fairseq-preprocess --only-source`` writes it, with
``--label-dict`` as its dictionary; ``--regression-target``: ``{split}.label`` copied).
``--node-targets``, ``--no-target-label``, ``--leaf-tags``, ``--dependency-heads`` (read from
``{pref}.input0.SUFFIX``), ``--srcdict`` and ``--workers`` apply to the trees.

Everything is written into a hidden temporary folder first and moved into place only when every
split has succeeded, so a failed or interrupted run leaves nothing that looks like valid output.
"""

import logging
import os
import sys

from fairseq import options

from fairseq_tree.data.classification_layout import ClassificationOptions, binarize_classification
from fairseq_tree.data.preprocess import PreprocessOptions, preprocess
from fairseq_tree.errors import FairseqTreeError

CLASSIFICATION_TASK = "tree_classification"


def get_parser():
    parser = options.get_preprocessing_parser()
    parser.description = (
        "Binarise bracketed trees for fairseq: (tree, text) pairs for tree_translation "
        "(--source-lang, --target-lang), trees alone (--only-source), or the whole layout of "
        "--task tree_classification: {pref}.input0 (trees), {pref}.input1 (second trees, "
        "optional) and {pref}.label of each split into input0/, input1/ and label/ of "
        "--destdir.")
    group = parser.add_argument_group("Trees")
    group.add_argument(
        "--skip-invalid", action="store_true",
        help="skip line pairs with a bad side (both sides together): a source tree, or with "
        "--target-trees a target tree, that is malformed, a line that is empty or not UTF-8; "
        "count them and report them in the summary, instead of stopping at the first one",
    )
    group.add_argument(
        "--leaf-tags", action="store_true",
        help="also write the leaves' POS tags as {split}.{src}-{tgt}.{src}.tags ({split}.tags "
        "with --only-source; the source "
        "dictionary ids of [TAG], aligned with the leaves and EOS; pad where a leaf has no tag, "
        "e.g. a subword piece, and at EOS); the tags join the source dictionary as node labels do",
    )
    group.add_argument(
        "--target-trees", action="store_true",
        help="the target files hold bracketed trees (one a line), not text: write their leaves "
        "as the stock target and their node labels and spans beside it "
        "({split}.{src}-{tgt}.{tgt}.labels, .spans), for tree_translation --target-trees; the "
        "labels join the target dictionary as source labels join the source's",
    )
    group.add_argument(
        "--dependency-heads", metavar="SUFFIX",
        help="read each split's dependency heads from {pref}.SUFFIX (CoNLL-U, one sentence per "
        "source line, its tokens exactly the tree's leaves) and write them as "
        "{split}.{src}-{tgt}.{src}.heads ({split}.heads with --only-source; per leaf, the "
        "0-based index of its head, -1 at the root); --task tree_classification reads "
        "{pref}.input0.SUFFIX and {pref}.input1.SUFFIX",
    )
    group.add_argument(
        "--node-targets", metavar="DICT",
        help="with --only-source or --task tree_classification: the trees' node labels and "
        "preterminal tags are classes of this dictionary file (e.g. label/dict.txt); write them "
        "as per-leaf and per-node targets ({split}.node_targets) and give every node of the "
        "model's input one label",
    )
    group.add_argument(
        "--no-target-label", metavar="LABEL",
        help="with --node-targets: leaves and nodes labelled LABEL get no target (e.g. the "
        "neutral phrases of a 2-class SST)",
    )
    group = parser.add_argument_group("Classification (--task tree_classification)")
    group.add_argument(
        "--label-dict", metavar="DICT",
        help="the class dictionary of {pref}.label (one class a line, in class order), written "
        "as label/dict.txt; default: built from the training labels, as fairseq-preprocess "
        "builds it",
    )
    group.add_argument(
        "--regression-target", action="store_true",
        help="{pref}.label holds numbers (K per line, fairseq's regression layout): copied as "
        "label/{split}.label, not binarized",
    )
    return parser


def check_args(parser, args):
    unsupported = [("--align-suffix", args.align_suffix), ("--alignfile", args.alignfile)]
    for flag, value in unsupported:
        if value:
            parser.error(f"{flag} is not supported by fairseq-tree-preprocess")
    if args.dataset_impl != "mmap":
        parser.error("fairseq-tree-preprocess writes --dataset-impl mmap only")
    if args.task == CLASSIFICATION_TASK:
        check_classification_args(parser, args)
    else:
        check_pair_args(parser, args)
    if args.target_trees and (args.only_source or args.task == CLASSIFICATION_TASK):
        parser.error("--target-trees needs target files: not with --only-source or "
                     "--task tree_classification")
    if args.node_targets and args.leaf_tags:
        parser.error("--leaf-tags with --node-targets: the trees' word labels are classes "
                     "(targets), not POS tags")
    if args.no_target_label and not args.node_targets:
        parser.error("--no-target-label needs --node-targets")
    if args.node_targets and not os.path.isfile(args.node_targets):
        parser.error(f"--node-targets {args.node_targets}: no such class dictionary file")


def check_pair_args(parser, args):
    """Tree-text pairs, or (``--only-source``) trees alone."""
    if args.label_dict or args.regression_target:
        parser.error(f"--label-dict and --regression-target need --task {CLASSIFICATION_TASK}")
    if args.only_source:
        if args.joined_dictionary or args.tgtdict:
            parser.error("--only-source binarizes source trees alone: no --joined-dictionary "
                         "or --tgtdict")
    elif not args.source_lang or not args.target_lang:
        parser.error("--source-lang and --target-lang are required (or --only-source)")
    if args.node_targets and not args.only_source:
        parser.error("--node-targets needs --only-source (trees whose labels are classes)")
    if args.joined_dictionary and args.tgtdict and args.srcdict != args.tgtdict:
        parser.error("--joined-dictionary takes one dictionary: give --srcdict only")
    has_dicts = args.srcdict and (args.only_source or args.tgtdict or args.joined_dictionary)
    if not has_dicts and not args.trainpref:
        parser.error("--trainpref is required to build a dictionary (or give --srcdict/--tgtdict)")


def check_classification_args(parser, args):
    """``--task tree_classification``: trees and labels, no target side."""
    given = [flag for flag, value in (
        ("--source-lang", args.source_lang), ("--target-lang", args.target_lang),
        ("--joined-dictionary", args.joined_dictionary), ("--tgtdict", args.tgtdict),
        ("--skip-invalid", args.skip_invalid), ("--dict-only", args.dict_only)) if value]
    if given:
        parser.error(f"--task {CLASSIFICATION_TASK} binarizes trees and their labels, line by "
                     f"line: no {', '.join(given)}")
    if args.label_dict and not os.path.isfile(args.label_dict):
        parser.error(f"--label-dict {args.label_dict}: no such class dictionary file")
    if args.regression_target and args.label_dict:
        parser.error("--regression-target copies numbers: it takes no --label-dict")
    if not args.trainpref and not (args.srcdict and (args.label_dict or args.regression_target)):
        parser.error("--trainpref is required to build the dictionaries (or give --srcdict and "
                     "--label-dict)")


def main(args):
    """Binarise as the parsed (and checked: ``check_args``) command line says."""
    if args.task == CLASSIFICATION_TASK:
        options = ClassificationOptions.from_args(args)
        binarize_classification(options)
    else:
        options = PreprocessOptions.from_args(args)
        preprocess(options, log_line=str(args))


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
    except FairseqTreeError as err:
        sys.exit(f"fairseq-tree-preprocess: error: {err}")


if __name__ == "__main__":
    cli_main()
