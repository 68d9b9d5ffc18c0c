"""Parsing backends: token lists in, one bracketed constituency tree per sentence out.

    parser = build_parser("link-grammar", "en", timeout=10)
    results = parser.parse([["The", "dog", "barked", "."], []])
    results[0].tree      # "(S (NP The dog) (VP barked) .)"; results[1].tree == "" (empty input)
    results[0].fallback  # None, or why the tree is a flat "(ROOT tok ...)" fallback
    parser.close()

Backends (``BACKENDS``): ``stanza`` (default of fairseq-tree-parse), ``corenlp``,
``link-grammar``, ``spacy`` (any installed spaCy pipeline's dependency parses, made phrase
structure by ``fairseq_tree.trees.dependency``; ``results[i].conllu`` keeps the parse),
``induced`` (Algorithm 1 of Wang et al., 2019, on a constituent_transformer masked LM: no
parser, any language), ``flat`` and ``right-branching`` (no syntax: one node, or a node over
every suffix). Heavy libraries are imported only by the
backend that needs them.
"""

from fairseq_tree.parsing.base import (
    FLAT_LABEL,
    DependencyTree,
    Failure,
    FlatParser,
    Parser,
    ParseResult,
    ParserUnavailable,
    RightBranchingParser,
    flat_tree,
    right_branching_tree,
)


def _stanza(lang, **options):
    from fairseq_tree.parsing.stanza_backend import StanzaParser

    return StanzaParser(lang, **options)


def _corenlp(lang, **options):
    from fairseq_tree.parsing.corenlp import CoreNLPParser

    return CoreNLPParser(lang, **options)


def _link_grammar(lang, **options):
    from fairseq_tree.parsing.link_grammar import LinkGrammarParser

    return LinkGrammarParser(lang, **options)


def _induced(lang, **options):
    from fairseq_tree.parsing.induced import InducedParser

    return InducedParser(lang, **options)


def _spacy(lang, **options):
    from fairseq_tree.parsing.spacy_backend import SpacyParser

    return SpacyParser(lang, **options)


def _flat(lang, **options):
    return FlatParser()


def _right_branching(lang, **options):
    return RightBranchingParser()


BACKENDS = {"stanza": _stanza, "corenlp": _corenlp, "link-grammar": _link_grammar,
            "spacy": _spacy, "induced": _induced, "flat": _flat,
            "right-branching": _right_branching}
# The options each backend takes (build_parser ignores the others, so one set serves all).
BACKEND_OPTIONS = {
    "stanza": ("stanza_dir", "batch_size"),
    "corenlp": ("corenlp_url", "timeout", "memory"),
    "link-grammar": ("timeout", "linkage_limit", "max_null_count"),
    "spacy": ("spacy_model", "batch_size"),
    "induced": ("induced_checkpoint", "induced_dict", "induced_bpe_codes", "induced_min_layer",
                "induced_threshold"),
    "flat": (),
    "right-branching": (),
}


def build_parser(name: str, lang: str, **options) -> Parser:
    """The backend ``name`` for language ``lang``; options it does not take are ignored, and
    None means its default. Raises ``ParserUnavailable`` (a one-line how-to-fix message) when
    it cannot run here."""
    if name not in BACKENDS:
        raise ValueError(f"unknown parser {name!r}; choose from {', '.join(BACKENDS)}")
    wanted = {key: value for key, value in options.items()
              if key in BACKEND_OPTIONS[name] and value is not None}
    return BACKENDS[name](lang, **wanted)


__all__ = [
    "BACKENDS",
    "FLAT_LABEL",
    "Failure",
    "FlatParser",
    "ParseResult",
    "Parser",
    "ParserUnavailable",
    "RightBranchingParser",
    "DependencyTree",
    "build_parser",
    "flat_tree",
    "right_branching_tree",
]
