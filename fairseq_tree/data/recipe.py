"""``recipe.json``: the record a data-prep recipe leaves beside its data, read and written here only.

Every recipe writes one into its output folder (the settings that made the data, its split sizes,
what the text steps left out); the experiment runner, ``fairseq-tree-translate --recipe``,
``fairseq-tree-classify --recipe``, ``from_pretrained(recipe=...)`` and the benchmarks read it
back. Paths in it are relative to its folder. A translation recipe's record (``src``, ``tgt``, BPE
codes, lowercasing, Moses settings) is what ``TranslationRecipe`` reads for inference; a
classification recipe's (its data set, views, parser, spaCy pipeline, BPE codes) is what
``ClassificationRecipe`` reads; the other fields are the recipe's own.
"""

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.line_files import open_output

RECIPE_FILE = "recipe.json"
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


def with_recipe(options: Dict, recipe: Dict) -> Dict:
    """``options`` (inference keywords) with what they leave unset taken from a recipe's
    settings (a flag is on when either sets it; a dict of options, such as a parser's, is
    completed key by key); BPE codes only when no sentencepiece model is given."""
    merged = dict(options)
    for key, value in recipe.items():
        if key == "bpe_codes" and options.get("sentencepiece_model"):
            continue
        if isinstance(value, dict) and isinstance(options.get(key), dict):
            merged[key] = with_recipe(options[key], value)
        else:
            merged[key] = options.get(key) or value
    return merged


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


@dataclass(frozen=True)
class TranslationRecipe:
    """What inference needs from a translation recipe's record: its data-bin, languages, BPE
    codes and the text steps its sources went through."""

    folder: str
    src: str
    tgt: str
    bpe_codes: Optional[str] = None  # relative to ``folder``
    lowercase: bool = False
    moses_aggressive_dash_splits: bool = False
    parser: Optional[str] = None

    @classmethod
    def read(cls, folder: Folder) -> "TranslationRecipe":
        record = read_recipe(folder)
        try:
            return cls(str(folder), record["src"], record["tgt"], record["bpe_codes"],
                       record.get("lowercase", False),
                       record.get("moses_aggressive_dash_splits", False), record.get("parser"))
        except KeyError as err:
            raise FairseqTreeError(f"cannot read {recipe_path(folder)}: it has no {err}") from None

    def resolve(self, relative: str) -> str:
        """A path of the record, made absolute (fairseq reads a data path starting with "." as
        inside the model folder)."""
        return os.path.abspath(os.path.join(self.folder, relative))

    @property
    def data_bin(self) -> str:
        return self.resolve("data-bin")

    def hub_options(self) -> dict:
        """The record as ``from_pretrained`` keywords: raw input is treated as the recipe
        treated its test sets (’ -> ', no punctuation normalisation)."""
        return {"data_name_or_path": self.data_bin, "source_lang": self.src,
                "target_lang": self.tgt,
                "bpe_codes": self.resolve(self.bpe_codes) if self.bpe_codes else None,
                "lowercase": self.lowercase,
                "aggressive_dash_splits": self.moses_aggressive_dash_splits, "quote": True}


# How each classification recipe (data-prep/prepare_classification.py) made the tokens of its
# examples from raw text, as ``RawTextParser`` keywords: Moses with punctuation normalization
# (``document_sentences``), IMDB's reviews split into sentences and cut to their first words,
# the agreement examples in the words of the spaCy pipeline that found them. Not here: SVA, whose
# leaves are Linzen et al.'s words with the rare ones replaced by their POS tags, which raw text
# cannot repeat (its trees can be classified).
MOSES_EXAMPLES = {"tokenize": "moses", "normalize": True}
CLASSIFICATION_TEXT = {
    "rt-snippets": MOSES_EXAMPLES, "sick": MOSES_EXAMPLES, "msrp": MOSES_EXAMPLES,
    "imdb": {**MOSES_EXAMPLES, "split_sentences": True},
    "agreement": {"tokenize": "spacy"},
    # SST's trees come parsed and PTB-tokenized, with no parser recorded: Moses is the nearest
    # tokenization, and the parser is the caller's to give.
    "sst": {"tokenize": "moses"},
}
IMDB_MAX_WORDS = 500  # prepare_classification.py's --max-words default
SETTINGS_FILE = "settings.json"  # the recipe's settings (recipe_steps.check_settings)


@dataclass(frozen=True)
class ClassificationRecipe:
    """What inference needs from a classification recipe's record: each view's data-bin and
    class names, and the text steps, parser and BPE codes its trees were made with."""

    folder: str
    dataset: str
    views: Dict[str, dict] = field(default_factory=dict)
    parser: Optional[str] = None
    parser_args: Tuple[str, ...] = ()
    spacy: Optional[dict] = None  # {"model", "model_version", "spacy_version"}
    bpe_codes: Optional[str] = None  # relative to ``folder``
    max_words: int = 0  # IMDB: reviews cut to their first whole sentences within N words

    @classmethod
    def read(cls, folder: Folder) -> "ClassificationRecipe":
        record = read_recipe(folder)
        try:
            views, dataset = record["views"], record["dataset"]
        except KeyError as err:
            raise FairseqTreeError(f"cannot read {recipe_path(folder)}: it has no {err} (not a "
                                   "classification recipe's)") from None
        max_words = 0
        if dataset == "imdb":
            settings = read_settings(folder)
            max_words = int(record.get("max_words", settings.get("max_words", IMDB_MAX_WORDS)))
        return cls(str(folder), dataset, views, record.get("parser"),
                   tuple(record.get("parser_args") or ()), record.get("spacy"),
                   record.get("bpe_codes"), max_words)

    def resolve(self, relative: str) -> str:
        return os.path.abspath(os.path.join(self.folder, relative))

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

    def class_names(self, view: str) -> Optional[List[str]]:
        """The names of the view's classes in class order (class k is symbol "k"); None for
        scores."""
        return self.views[view].get("classes")

    def hub_options(self, view: str) -> dict:
        """The record as ``classification_hub.from_pretrained`` keywords for ``view``: its
        data-bin, BPE codes, parser (its recorded arguments and spaCy pipeline) and the text
        steps that made the examples' tokens (``raw_text_refused`` where none can, see
        ``CLASSIFICATION_TEXT``)."""
        parser_options = {"spacy_model": self.spacy["model"]} if self.spacy else {}
        text = dict(CLASSIFICATION_TEXT.get(self.dataset, {"raw_text_refused": (
            f"a {self.dataset} recipe's leaves are not the tokens of raw text")}))
        if self.max_words:
            text["max_words"] = self.max_words
        return {"data_name_or_path": self.resolve(self.views[view]["data_bin"]),
                "bpe_codes": self.resolve(self.bpe_codes) if self.bpe_codes else None,
                "parser": self.parser, "parser_args": list(self.parser_args),
                "parser_options": parser_options, **text}


def read_settings(folder: Folder) -> dict:
    """The recipe's settings.json (empty when there is none)."""
    path = Path(folder) / SETTINGS_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError) as err:
        raise FairseqTreeError(f"cannot read {path}: {err}") from None
