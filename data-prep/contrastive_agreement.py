"""A contrastive English -> French agreement set, gold by construction (issue 45; Sennrich 2017,
Burlot & Yvon 2017): English sources, their French references, and for each reference one
contrast that differs from it in one agreeing word only. A translation model is right on an item
when it gives the reference a higher probability than the contrast (``bench/contrastive.py``).

    python data-prep/contrastive_agreement.py --output data/contrastive-en-fr \\
        [--words data-prep/contrastive/en-fr.tsv] [--per-cell 200] [--seed 1] \\
        [--check-vocabulary data/bible-en-fr-sample]

Two phenomena, each in conditions with and without an attractor (a noun between the subject and
the agreeing word whose feature is the other one), subjects' numbers balanced in every cell:

* ``verb-number``: the French main verb agrees in number with the subject; the contrast has the
  verb of the other number. Conditions: ``simple`` ("The king speaks."), ``pp`` ("The king of
  the cities speaks.", *de* contracted to *du / des / de l' / de la*), ``subject-relative`` ("The
  king who loves the prophets speaks.", *qui*), ``object-relative`` ("The king that the prophets
  love speaks.", *que*), ``two-pps`` ("The king of the cities of the nations speaks."; with an
  attractor both nouns have the other number).
* ``adjective-gender``: a predicative adjective agrees in gender (and number) with the subject,
  which English does not mark: the model has to know which noun heads the subject and the
  gender of its translation. The contrast has the adjective of the other gender. Conditions:
  ``simple`` ("The daughter is good."), ``pp`` ("The daughter of the king is good.", the
  attractor of the other gender and the subject's number), ``two-pps``.

No parser decides any label: the subject, its number and gender come from the templates and the
word list. The word list (``--words``, format in data-prep/contrastive/en-fr.tsv) gives each
noun's forms, French gender and whether it may be a verb's subject; French articles follow
gender, number and elision (*l'* before a vowel or a mute h). ``--check-vocabulary RECIPE``
refuses words that the recipe's tokenised training text (``tok/train.{src,tgt}``) never holds.

Output folder: ``source.en``, ``reference.fr``, ``contrast.fr`` (line-aligned; what
``fairseq-tree-translate --score-targets`` reads), ``items.tsv`` (one item a line: id,
phenomenon, condition, attractor, the feature the contrast flips (``number``, ``gender``), subject
number and gender, the three sentences) and
``summary.json`` (settings, counts per cell, the vocabulary check).
"""

import argparse
import collections
import hashlib
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_WORDS = HERE / "contrastive" / "en-fr.tsv"
NUMBERS = ("sg", "pl")
GENDERS = ("m", "f")
VOWELS = set("aeiouyàâäéèêëîïôöûüùœæ")
REDRAWS = 50  # draws of a new item before the cell is declared too small for its words
ITEM_COLUMNS = ("id", "phenomenon", "condition", "attractor", "feature", "subject_number",
                "subject_gender", "source", "reference", "contrast")
FEATURE = {"verb-number": "number", "adjective-gender": "gender"}  # what the contrast flips
CELLS = {  # phenomenon -> its conditions, and whether each has an attractor cell
    "verb-number": {"simple": False, "pp": True, "subject-relative": True,
                    "object-relative": True, "two-pps": True},
    "adjective-gender": {"simple": False, "pp": True, "two-pps": True},
}


class WordListError(ValueError):
    """A malformed word list line; the message starts with FILE:LINE."""


@dataclass(frozen=True)
class Noun:
    en: dict  # number -> form
    fr: dict
    gender: str
    animate: bool
    aspirated: bool


@dataclass(frozen=True)
class Verb:
    en: dict  # number -> third-person form
    fr: dict


@dataclass(frozen=True)
class Adjective:
    en: str
    fr: dict  # (gender, number) -> form


@dataclass
class Words:
    nouns: list
    verbs: list
    tverbs: list
    adjectives: list

    def forms(self) -> tuple[set, set]:
        """Every English and French word form the list can put into a sentence."""
        english, french = set(), set()
        for noun in self.nouns:
            english.update(noun.en.values())
            french.update(noun.fr.values())
        for verb in self.verbs + self.tverbs:
            english.update(verb.en.values())
            french.update(verb.fr.values())
        for adjective in self.adjectives:
            english.add(adjective.en)
            french.update(adjective.fr.values())
        return english, french


FIELDS = {"noun": (6, 7), "verb": (5, 5), "tverb": (5, 5), "adj": (6, 6)}


def read_words(path: Path) -> Words:
    """The word list at ``path``; ``WordListError`` naming the line of a malformed entry."""
    words = Words([], [], [], [])
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        where = f"{path}:{lineno}"
        kind = fields[0]
        if kind not in FIELDS:
            raise WordListError(f"{where}: unknown entry {kind!r} (noun, verb, tverb or adj)")
        low, high = FIELDS[kind]
        if not low <= len(fields) <= high:
            raise WordListError(f"{where}: a {kind} line has {low - 1}"
                                f"{'' if low == high else f'-{high - 1}'} fields after {kind!r}, "
                                f"found {len(fields) - 1}")
        if kind == "noun":
            gender, flags = fields[5], set(fields[6].split(",")) if len(fields) > 6 else set()
            if gender not in GENDERS:
                raise WordListError(f"{where}: gender {gender!r} is not m or f")
            unknown = flags - {"animate", "aspirated"}
            if unknown:
                raise WordListError(f"{where}: unknown flags {sorted(unknown)}")
            words.nouns.append(Noun(dict(zip(NUMBERS, fields[1:3])),
                                    dict(zip(NUMBERS, fields[3:5])), gender, "animate" in flags,
                                    "aspirated" in flags))
        elif kind in ("verb", "tverb"):
            verb = Verb(dict(zip(NUMBERS, fields[1:3])), dict(zip(NUMBERS, fields[3:5])))
            if verb.fr["sg"] == verb.fr["pl"]:
                raise WordListError(f"{where}: the French forms are the same: no contrast")
            (words.verbs if kind == "verb" else words.tverbs).append(verb)
        else:
            keys = [(g, n) for n in NUMBERS for g in GENDERS]
            adjective = Adjective(fields[1], dict(zip(keys, fields[2:6])))
            if any(adjective.fr["m", n] == adjective.fr["f", n] for n in NUMBERS):
                raise WordListError(f"{where}: a French masculine and feminine form are the same: "
                                    "no contrast")
            words.adjectives.append(adjective)
    missing = [kind for kind, found in (("animate noun", [n for n in words.nouns if n.animate]),
                                        ("verb", words.verbs), ("tverb", words.tverbs),
                                        ("adj", words.adjectives)) if not found]
    if missing:
        raise WordListError(f"{path}: no {', no '.join(missing)} entry")
    return words


def other(value: str, values: tuple) -> str:
    return values[1 - values.index(value)]


def article(noun: Noun, number: str) -> str:
    """The French definite article of ``noun`` (``l'`` joined to the noun it elides before)."""
    if number == "pl":
        return "les "
    first = noun.fr["sg"][0].lower()
    if first in VOWELS or (first == "h" and not noun.aspirated):
        return "l'"
    return "le " if noun.gender == "m" else "la "


def french_np(noun: Noun, number: str) -> str:
    return article(noun, number) + noun.fr[number]


def french_of(noun: Noun, number: str) -> str:
    """*de* + the noun phrase, contracted: du, des (de le, de les), de la, de l'."""
    phrase = french_np(noun, number)
    for full, contracted in (("le ", "du "), ("les ", "des ")):
        if phrase.startswith(full):
            return contracted + phrase[len(full):]
    return "de " + phrase


def english_np(noun: Noun, number: str) -> str:
    return "the " + noun.en[number]


def sentence(words: list[str]) -> str:
    """Words joined, the first letter capitalized, a full stop at the end."""
    text = " ".join(words)
    return text[:1].upper() + text[1:] + "."


@dataclass(frozen=True)
class Item:
    phenomenon: str
    condition: str
    attractor: bool
    number: str
    gender: str
    source: str
    reference: str
    contrast: str


def draw_nouns(rng: random.Random, words: Words, count: int, subject_pool: list) -> list:
    """``count`` different nouns, the first from ``subject_pool``."""
    first = rng.choice(subject_pool)
    rest = rng.sample([n for n in words.nouns if n is not first], count - 1)
    return [first, *rest]


def verb_item(rng, words: Words, condition: str, attractor: bool, number: str) -> Item:
    """One ``verb-number`` item: the subject's number is ``number``; an attractor has the other."""
    animate = [n for n in words.nouns if n.animate]
    inner = other(number, NUMBERS) if attractor else number
    verb = rng.choice(words.verbs)
    if condition in ("subject-relative", "object-relative"):
        subject, noun = draw_nouns(rng, Words(animate, [], [], []), 2, animate)
        tverb = rng.choice(words.tverbs)
        if condition == "subject-relative":
            en = [english_np(subject, number), "who", tverb.en[number], english_np(noun, inner)]
            fr = [french_np(subject, number), "qui", tverb.fr[number], french_np(noun, inner)]
        else:
            en = [english_np(subject, number), "that", english_np(noun, inner), tverb.en[inner]]
            fr = [french_np(subject, number), "que", french_np(noun, inner), tverb.fr[inner]]
    else:
        size = {"simple": 1, "pp": 2, "two-pps": 3}[condition]
        subject, *others = draw_nouns(rng, words, size, animate)
        en, fr = [english_np(subject, number)], [french_np(subject, number)]
        for noun in others:
            en += ["of", english_np(noun, inner)]
            fr.append(french_of(noun, inner))
    return Item("verb-number", condition, attractor, number, subject.gender,
                sentence(en + [verb.en[number]]), sentence(fr + [verb.fr[number]]),
                sentence(fr + [verb.fr[other(number, NUMBERS)]]))


def adjective_item(rng, words: Words, condition: str, attractor: bool, number: str,
                   gender: str) -> Item:
    """One ``adjective-gender`` item: subject of ``number`` and ``gender``; an attractor has the
    subject's number and the other gender."""
    inner_gender = other(gender, GENDERS) if attractor else gender
    size = {"simple": 1, "pp": 2, "two-pps": 3}[condition]
    subjects = [n for n in words.nouns if n.gender == gender]
    inner = [n for n in words.nouns if n.gender == inner_gender]
    subject = rng.choice(subjects)
    others = rng.sample([n for n in inner if n is not subject], size - 1)
    adjective = rng.choice(words.adjectives)
    be = {"sg": ("is", "est"), "pl": ("are", "sont")}[number]
    en, fr = [english_np(subject, number)], [french_np(subject, number)]
    for noun in others:
        en += ["of", english_np(noun, number)]
        fr.append(french_of(noun, number))
    return Item("adjective-gender", condition, attractor, number, gender,
                sentence(en + [be[0], adjective.en]),
                sentence(fr + [be[1], adjective.fr[gender, number]]),
                sentence(fr + [be[1], adjective.fr[other(gender, GENDERS), number]]))


def cell_items(words: Words, phenomenon: str, condition: str, attractor: bool, per_cell: int,
               seed: int) -> list[Item]:
    """``per_cell`` distinct items, half with singular subjects (adjectives: a quarter per
    number and gender), drawn from a generator seeded by the seed and the cell."""
    key = f"{seed}:{phenomenon}:{condition}:{attractor}"
    rng = random.Random(int(hashlib.sha256(key.encode()).hexdigest()[:16], 16))
    if phenomenon == "verb-number":
        kinds = [(n, None) for n in NUMBERS]
    else:
        kinds = [(n, g) for n in NUMBERS for g in GENDERS]
    items, seen = [], set()
    for k in range(per_cell):
        number, gender = kinds[k % len(kinds)]
        for _ in range(REDRAWS):
            if phenomenon == "verb-number":
                item = verb_item(rng, words, condition, attractor, number)
            else:
                item = adjective_item(rng, words, condition, attractor, number, gender)
            if item.source not in seen:
                break
        else:
            raise WordListError(f"{phenomenon} {condition}: the word list makes fewer than "
                                f"{per_cell} different items; lower --per-cell")
        seen.add(item.source)
        items.append(item)
    return items


def generate(words: Words, per_cell: int, seed: int) -> list[Item]:
    items = []
    for phenomenon, conditions in CELLS.items():
        for condition, has_attractor in conditions.items():
            for attractor in ((False, True) if has_attractor else (False,)):
                items += cell_items(words, phenomenon, condition, attractor, per_cell, seed)
    return items


def vocabulary_check(words: Words, recipe: Path) -> dict:
    """Word forms of the list that the recipe's tokenised training text never holds, and how
    often it holds each French form (a model may prefer the frequent form of a pair)."""
    record = json.loads((recipe / "recipe.json").read_text(encoding="utf-8"))
    seen = {}
    for side in ("src", "tgt"):
        path = recipe / "tok" / f"train.{record[side]}"
        counts = collections.Counter()
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                counts.update(line.split())
        seen[side] = counts
    english, french = words.forms()
    return {"recipe": str(recipe),
            "unseen_en": sorted(w for w in english if not seen["src"][w]),
            "unseen_fr": sorted(w for w in french if not seen["tgt"][w]),
            "training_counts_fr": {w: seen["tgt"][w] for w in sorted(french)}}


def write_set(items: list[Item], output: Path, summary: dict):
    output.mkdir(parents=True, exist_ok=True)
    files = {"source.en": [i.source for i in items], "reference.fr": [i.reference for i in items],
             "contrast.fr": [i.contrast for i in items]}
    for name, lines in files.items():
        (output / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    rows = ["\t".join(ITEM_COLUMNS)]
    for k, i in enumerate(items, start=1):
        rows.append("\t".join(map(str, (k, i.phenomenon, i.condition, int(i.attractor),
                                        FEATURE[i.phenomenon], i.number, i.gender, i.source,
                                        i.reference, i.contrast))))
    (output / "items.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (output / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n",
                                         encoding="utf-8")


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", required=True, metavar="DIR")
    parser.add_argument("--words", default=str(DEFAULT_WORDS), metavar="FILE",
                        help="the bilingual word list (default: data-prep/contrastive/en-fr.tsv)")
    parser.add_argument("--per-cell", type=int, default=200, metavar="N",
                        help="items per condition and attractor cell (default 200)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--check-vocabulary", metavar="RECIPE",
                        help="a translation recipe's folder: refuse words its tokenised "
                        "training text never holds")
    return parser


def main(argv=None):
    args = get_parser().parse_args(argv)
    prog = "contrastive_agreement"
    if args.per_cell < 2:
        sys.exit(f"{prog}: error: --per-cell must be at least 2 (both numbers)")
    try:
        words = read_words(Path(args.words))
        check = vocabulary_check(words, Path(args.check_vocabulary)) \
            if args.check_vocabulary else None
        if check and (check["unseen_en"] or check["unseen_fr"]):
            sys.exit(f"{prog}: error: {args.words}: words the training text of "
                     f"{args.check_vocabulary} never holds: English {check['unseen_en']}, "
                     f"French {check['unseen_fr']}")
        items = generate(words, args.per_cell, args.seed)
    except (OSError, WordListError, KeyError, ValueError) as err:
        sys.exit(f"{prog}: error: {err}")
    cells = collections.Counter(f"{i.phenomenon} {i.condition} "
                                f"{'attractor' if i.attractor else 'no attractor'} {i.number}"
                                for i in items)
    summary = {"command": " ".join(["data-prep/contrastive_agreement.py", *(argv or sys.argv[1:])]),
               "words": args.words, "words_sha256": hashlib.sha256(
                   Path(args.words).read_bytes()).hexdigest(),
               "per_cell": args.per_cell, "seed": args.seed, "items": len(items),
               "cells": dict(sorted(cells.items())), "vocabulary_check": check}
    write_set(items, Path(args.output), summary)
    print(f"{prog}: {len(items)} items in {len(cells) // 2} cells -> {args.output}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
