"""``recipe.json``: the record a data-prep recipe leaves beside its data, one schema (``Recipe``),
written (``Recipe.to_json``) and read (``Recipe.read``) here only.

Every recipe writes one into its output folder: what it did to raw text (``TextSteps``: the
tokenizer, the parser with its arguments and spaCy pipeline, lowercasing, BPE codes, the cut of
long documents), its languages (translation) or views and classes (classification), and its own
facts (split sizes, what the text steps left out, ...). The experiment runner,
``fairseq-tree-translate --recipe``, ``fairseq-tree-classify --recipe``,
``from_pretrained(recipe=...)`` and the benchmarks read it back. Paths in it are relative to its
folder. A record written before the schema had a version is read as version 1, with a message
saying what was filled in and from where (``migrated``).
"""

import json
import logging
import os
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.line_files import open_output

logger = logging.getLogger(__name__)

RECIPE_FILE = "recipe.json"
RECIPE_VERSION = 1
KINDS = ("translation", "classification", "treebank")
_SAID = set()  # the migrations told once a process
Folder = Union[str, Path]


def recipe_path(folder: Folder) -> Path:
    return Path(folder) / RECIPE_FILE


def has_recipe(folder: Folder) -> bool:
    return recipe_path(folder).is_file()


def read_recipe(folder: Folder, required: bool = True) -> Optional[dict]:
    """The record of the recipe whose output is ``folder``; None when there is none and it is
    not ``required``. An unreadable record raises ``FairseqTreeError`` naming the file."""
    path = recipe_path(folder)
    if not path.is_file():
        if required:
            raise FairseqTreeError(f"{path}: missing (written by the data's data-prep recipe)")
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise FairseqTreeError(f"cannot read {path}: {err}") from None
    if not isinstance(record, dict):
        raise FairseqTreeError(f"cannot read {path}: not a JSON object")
    return record


def write_recipe(folder: Folder, record: dict) -> bool:
    """Write ``record`` as the folder's recipe.json, unless it holds that already (a re-run
    leaves the file and its time alone); the file appears only once complete. Returns whether
    it was written."""
    path = recipe_path(folder)
    if path.is_file():
        try:
            if json.loads(path.read_text(encoding="utf-8")) == record:
                return False
        except ValueError:
            pass  # an unreadable old record is replaced
    with open_output(str(path)) as sink:
        sink.write(json.dumps(record, indent=2).encode("utf-8") + b"\n")
    return True


@dataclass
class TextSteps:
    """How raw text becomes the trees (and token sequences) a model reads: the steps a recipe's
    evaluation text went through, so that inference repeats them. One set of names, used by
    recipe.json's ``text``, both hubs, ``fairseq-tree-translate`` and ``fairseq-tree-classify``
    (``--tokenize``, ``--normalize-punctuation``, ...)."""

    parser: Any = None  # a fairseq-tree-parse backend's name (or, given to a hub, a Parser)
    parser_options: Dict = field(default_factory=dict)  # its build_parser keywords
    tokenize: str = "moses"  # none, moses, or spacy (the tokenizer of parser_options' spacy_model)
    normalize_punctuation: bool = False  # Moses punctuation normalization first
    aggressive_dash_splits: bool = False  # Moses -a
    quote: bool = False  # ’ -> ' first (the translation recipes' test sets)
    lowercase: bool = False  # lowercase the leaves after parsing (the IWSLT recipes)
    split_sentences: bool = False  # documents: one tree per pysbd sentence, under one root
    max_words: int = 0  # documents: the first whole sentences within N words (0: all)
    bpe_codes: Optional[str] = None  # subword-nmt codes applied to each leaf
    sentencepiece_model: Optional[str] = None  # or a sentencepiece model

    def completed(self, given: Dict) -> "TextSteps":
        """These steps with ``given`` (keywords, a CLI's options) put over them: a value given
        (not None) wins, a flag is on where either sets it, parser options merge key by key (a
        parser given other than the recorded one brings its own options only); a sentencepiece
        model given replaces recorded BPE codes."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(given) - known)
        if unknown:
            raise TypeError(f"unknown text steps: {', '.join(unknown)}")
        merged = {f.name: getattr(self, f.name) for f in fields(self)}
        for key, value in given.items():
            if value is None:
                continue
            if isinstance(value, bool) and not value:
                continue  # a flag left off: the record's
            merged[key] = value
        if given.get("parser") not in (None, self.parser):
            merged["parser_options"] = dict(given.get("parser_options") or {})
        else:
            merged["parser_options"] = {**self.parser_options, **(given.get("parser_options")
                                                                  or {})}
        if given.get("sentencepiece_model") and not given.get("bpe_codes"):
            merged["bpe_codes"] = None
        return TextSteps(**merged)


@dataclass
class Recipe:
    """One recipe.json: what its recipe did, for the hubs, the CLIs and the benchmarks.

    ``text`` is what raw text goes through to become the recipe's trees (with ``parser_args``,
    the fairseq-tree-parse arguments it recorded, and ``spacy``, the pipeline); ``src``/``tgt``
    a translation recipe's languages (``languages`` the language of a side whose name is none, the
    synthetic tasks' ``src``: what the parser and Moses are told); ``dataset``/``views`` a classification recipe's (each view's
    ``data_bin``, ``classes``, sizes); ``raw_text_refused`` why raw text cannot be read (None: it
    can); ``details`` the recipe's own fields (sizes, stats, test sets, seed, ...), written at
    the top level beside the schema's."""

    kind: str
    text: TextSteps = field(default_factory=TextSteps)
    parser_args: List[str] = field(default_factory=list)
    spacy: Optional[dict] = None  # {"model", "model_version", "spacy_version"}
    src: Optional[str] = None
    tgt: Optional[str] = None
    languages: Dict[str, str] = field(default_factory=dict)  # {side: language}, where they differ
    dataset: Optional[str] = None
    views: Dict[str, dict] = field(default_factory=dict)
    raw_text_refused: Optional[str] = None
    details: Dict[str, Any] = field(default_factory=dict)
    version: int = RECIPE_VERSION
    folder: str = ""  # where it was read from (not written)
    migrated: Optional[str] = None  # what reading a record without a version filled in

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"recipe kind {self.kind!r} is not one of {', '.join(KINDS)}")

    # -- writing and reading

    def to_json(self) -> dict:
        """The record: the version and kind, the text steps under their own names
        (``text.parser`` the recorded parser's name; its options are ``parser_args`` and
        ``spacy``), the other fields of the schema, then ``details``."""
        text = asdict(self.text)
        text.pop("parser_options")
        record = {"version": self.version, "kind": self.kind, **text,
                  "parser_args": list(self.parser_args), "spacy": self.spacy}
        for name in ("src", "tgt", "dataset", "raw_text_refused"):
            if getattr(self, name) is not None:
                record[name] = getattr(self, name)
        if self.languages:
            record["languages"] = self.languages
        if self.views:
            record["views"] = self.views
        clash = sorted(set(record) & set(self.details))
        if clash:
            raise ValueError(f"recipe details {', '.join(clash)} clash with the schema's fields")
        return {**record, **self.details}

    @classmethod
    def from_json(cls, record: dict, folder: Folder = "", where: str = RECIPE_FILE,
                  kind: Optional[str] = None) -> "Recipe":
        """The recipe of a record (a version-less one migrated, as a recipe of ``kind`` when
        given); ``FairseqTreeError`` naming ``where`` for one that cannot be read."""
        if not isinstance(record, dict):
            raise FairseqTreeError(f"cannot read {where}: not a JSON object")
        record = dict(record)
        version = record.pop("version", None)
        if version is None:
            return migrate(record, folder, where, kind)
        if not isinstance(version, int) or version > RECIPE_VERSION:
            raise FairseqTreeError(f"cannot read {where}: version {version!r}; this fairseq-tree "
                                   f"reads versions up to {RECIPE_VERSION}")
        try:
            text = TextSteps(**{f.name: record.pop(f.name) for f in fields(TextSteps)
                                if f.name in record and f.name != "parser_options"})
            for f in fields(TextSteps):
                value = getattr(text, f.name)
                if f.name in STEP_TYPES and not (value is None and f.default is None
                                                 or type(value) is STEP_TYPES[f.name]):
                    raise ValueError(f"{f.name} is {value!r}, not "
                                     f"{'an' if f.name == 'max_words' else 'a'} "
                                     f"{STEP_TYPES[f.name].__name__}")
            schema = {name: record.pop(name) for name in (
                "parser_args", "spacy", "src", "tgt", "languages", "dataset", "views",
                "raw_text_refused")
                if name in record}
            return cls(record.pop("kind"), text, folder=str(folder), details=record, **schema)
        except KeyError as err:
            raise FairseqTreeError(f"cannot read {where}: it has no {err}") from None
        except (TypeError, ValueError) as err:
            raise FairseqTreeError(f"cannot read {where}: {err}") from None

    @classmethod
    def read(cls, folder: Folder, kind: Optional[str] = None) -> "Recipe":
        """The recipe.json of ``folder`` (of ``kind``, when given: another is an error)."""
        recipe = cls.from_json(read_recipe(folder), folder, str(recipe_path(folder)), kind)
        if recipe.migrated and recipe.migrated not in _SAID:
            _SAID.add(recipe.migrated)
            logger.info(recipe.migrated)
        if kind is not None and recipe.kind != kind:
            raise FairseqTreeError(f"{recipe_path(folder)}: a {recipe.kind} recipe's, not a "
                                   f"{kind} recipe's")
        return recipe

    def write(self, folder: Folder) -> bool:
        return write_recipe(folder, self.to_json())

    # -- what inference reads

    def resolve(self, relative: str) -> str:
        """A path of the record, made absolute (fairseq reads a data path starting with "." as
        inside the model folder)."""
        return os.path.abspath(os.path.join(self.folder, relative))

    def text_steps(self) -> TextSteps:
        """``text`` with its paths made absolute and the spaCy pipeline among the parser's
        options (its recorded arguments are the parsing layer's to read:
        ``inference.text.recipe_steps``)."""
        return replace(
            self.text, parser_options={"spacy_model": self.spacy["model"]} if self.spacy else {},
            **{name: self.resolve(getattr(self.text, name))
               for name in ("bpe_codes", "sentencepiece_model") if getattr(self.text, name)})

    def language(self, side: str) -> str:
        """The language of a translation recipe's side (its name, unless recorded apart)."""
        return self.languages.get(side, side)

    @property
    def data_bin(self) -> str:
        """A translation recipe's data-bin."""
        return self.resolve("data-bin")

    def view(self, name: Optional[str] = None, trained_on: Optional[str] = None) -> str:
        """The view (task) meant: ``name``; else the one whose data-bin the model was trained
        on (``trained_on``, the checkpoint's data folder, compared by folder name); else the
        only one."""
        if name is None and trained_on:
            found = [view for view, record in self.views.items()
                     if Path(record.get("data_bin", "")).name == Path(trained_on).name]
            name = found[0] if len(found) == 1 else None
        if name is None and len(self.views) == 1:
            name = next(iter(self.views))
        if name not in self.views:
            given = f"view {name!r} is not one" if name else "name one"
            raise FairseqTreeError(f"{recipe_path(self.folder)}: {given} of its views "
                                   f"({', '.join(self.views)})")
        return name

    def view_data_bin(self, view: str) -> str:
        return self.resolve(self.views[view]["data_bin"])

    def class_names(self, view: str) -> Optional[List[str]]:
        """The names of the view's classes in class order (class k is symbol "k"); None for
        scores."""
        return self.views[view].get("classes")


# The type of each recorded text step (the others are names or paths: a str, or None).
STEP_TYPES = {f.name: str if f.default is None else type(f.default)
              for f in fields(TextSteps) if f.name not in ("parser", "parser_options")}


# How each classification recipe (data-prep/prepare_classification.py) makes the tokens of its
# examples from raw text: Moses with punctuation normalization, IMDB's reviews split into
# sentences (and cut to their first words: ``max_words``), the agreement examples in the words of
# the spaCy pipeline that found them; SST's trees come parsed and PTB-tokenized (Moses is the
# nearest). The recipes record it; a record without a version gets it by its data set's name.
MOSES_EXAMPLES = {"tokenize": "moses", "normalize_punctuation": True}
CLASSIFICATION_TEXT = {
    "rt-snippets": MOSES_EXAMPLES, "sick": MOSES_EXAMPLES, "msrp": MOSES_EXAMPLES,
    "imdb": {**MOSES_EXAMPLES, "split_sentences": True},
    "agreement": {"tokenize": "spacy"},
    "sst": {"tokenize": "moses"},
}
IMDB_MAX_WORDS = 500  # prepare_classification.py's --max-words default then


def classification_text(dataset: str, max_words: int = 0) -> Tuple[Dict, Optional[str]]:
    """The text steps (``TextSteps`` keywords) that made a classification data set's tokens,
    with IMDB's cut to ``max_words``, and why raw text cannot repeat them (None where it can:
    e.g. SVA's leaves are Linzen et al.'s words, the rare ones replaced by their POS tags)."""
    text = dict(CLASSIFICATION_TEXT.get(dataset, {}))
    if dataset == "imdb":
        text["max_words"] = max_words
    refused = None if dataset in CLASSIFICATION_TEXT else \
        f"a {dataset} recipe's leaves are not the tokens of raw text"
    return text, refused
SETTINGS_FILE = "settings.json"  # the recipe's settings (recipe_steps.check_settings)


def migrate(record: dict, folder: Folder, where: str, kind: Optional[str] = None) -> Recipe:
    """A record written before recipe.json had a version, as version 1, saying what it filled in:
    a translation recipe's text steps are those its test sets went through (Moses, ’ -> ', its
    -a and lowercasing), its parser arguments those settings.json kept; a classification
    recipe's tokenization is the one its data set's recipe used then."""
    record = dict(record)
    filled = []
    kind = kind or ("classification" if "views" in record else
                    "translation" if "src" in record else "treebank")
    try:
        if kind == "classification":
            dataset = record.pop("dataset")
            max_words = 0
            if dataset == "imdb":
                settings = read_settings(folder) if folder else {}
                max_words = int(record.pop("max_words", settings.get("max_words",
                                                                     IMDB_MAX_WORDS)))
            text, refused = classification_text(dataset, max_words)
            filled.append(f"the tokenization of {dataset} recipes then "
                          f"({CLASSIFICATION_TEXT.get(dataset) or 'none'})")
            if dataset == "imdb":
                filled.append(f"max_words {max_words}")
            recipe = Recipe("classification", TextSteps(
                parser=record.pop("parser", None), bpe_codes=record.pop("bpe_codes", None),
                **text), list(record.pop("parser_args", None) or ()), record.pop("spacy", None),
                dataset=dataset, views=record.pop("views"), raw_text_refused=refused,
                details=record, folder=str(folder))
        elif kind == "translation":
            src, tgt = record.pop("src"), record.pop("tgt")
            settings = read_settings(folder) if folder else {}
            parser_args = list(settings.get("parser_arg") or ())
            if parser_args:
                filled.append(f"parser arguments {' '.join(parser_args)} from settings.json")
            filled.append("the text steps of its test sets (Moses, quote)")
            text = TextSteps(
                parser=record.pop("parser", None), tokenize="moses", quote=True,
                aggressive_dash_splits=bool(record.pop("moses_aggressive_dash_splits", False)),
                lowercase=bool(record.pop("lowercase", False)),
                bpe_codes=record.pop("bpe_codes", None))
            recipe = Recipe("translation", text, parser_args, record.pop("spacy", None),
                            src=src, tgt=tgt, details=record, folder=str(folder))
        else:
            steps = {"tokenize": "none", **{f.name: record.pop(f.name) for f in fields(TextSteps)
                                            if f.name in record}}
            recipe = Recipe("treebank", TextSteps(**steps), details=record, folder=str(folder))
    except KeyError as err:
        raise FairseqTreeError(f"cannot read {where}: it has no {err}") from None
    recipe.migrated = (f"{where}: written before recipe.json had a version; read as version "
                       f"{RECIPE_VERSION}, with {'; '.join(filled) or 'nothing filled in'}")
    return recipe


def read_settings(folder: Folder) -> dict:
    """The recipe's settings.json (empty when there is none)."""
    path = Path(folder) / SETTINGS_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError) as err:
        raise FairseqTreeError(f"cannot read {path}: {err}") from None
