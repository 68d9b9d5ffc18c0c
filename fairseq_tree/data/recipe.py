"""``recipe.json``: the record a data-prep recipe leaves beside its data, read and written here only.

Every recipe writes one into its output folder (the settings that made the data, its split sizes,
what the text steps left out); the experiment runner, ``fairseq-tree-translate --recipe``,
``from_pretrained(recipe=...)`` and the benchmarks read it back. Paths in it are relative to its
folder. A translation recipe's record (``src``, ``tgt``, BPE codes, lowercasing, Moses settings)
is what ``TranslationRecipe`` reads for inference; the other fields are the recipe's own.
"""

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

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
