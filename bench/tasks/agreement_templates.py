"""Targeted agreement prefixes with gold labels, from templates and word lists (Marvin & Linzen,
EMNLP 2018, "Targeted syntactic evaluation of language models"): the subject's number is known
by construction, never from a tagger, so a model's errors in one syntactic condition are its
own, not the extraction's (the Bible examples of ``fairseq_tree.trees.agreement`` come from a
parser and share its mistakes).

The task is Linzen et al.'s (2016) as the agreement recipe makes it: the input is the words of a
sentence before a present-tense verb, the label that verb's number (``SINGULAR`` "0", VBZ;
``PLURAL`` "1", VBP). An item is a prefix, its label, its condition, whether it holds an
attractor, and its template's id.

Templates (one a line; ``#`` starts a comment line)::

    CONDITION  TEMPLATE-ID  PATTERN ...

PATTERN is words and slots. A slot draws a word of a word list's class: ``{CLASS}`` for a class
of uninflected words (prepositions), ``{CLASS:ROLE}`` for a class of (singular, plural) forms,
the form of ROLE's number: ``subj`` the subject's, ``attr`` the attractor's, ``sg`` or ``pl``
fixed. ``{subj}`` is short for ``{noun:subj}``, ``{attr}`` for ``{noun:attr}``; a verb agreeing
with the subject is ``{tverb:subj}``. The label is the subject's number, so a pattern needs a
``:subj`` slot. Each slot of a class draws another word than the item's other slots of that
class ("the king of the kings" is never made). The attractor cells: in a template with ``:attr``
slots, the attractor's number is not the subject's in the attractor cell, and is the subject's
in the cell without ("the same frame with a same-number noun", so the two cells differ only in
the attractor's number); a template without ``:attr`` slots makes items of the cell without an
attractor only. Conditions are listed in the order their first template comes.

Word lists (one word a line; ``#`` starts a comment line)::

    CLASS  SINGULAR  PLURAL      an inflected class: nouns, verbs
    CLASS  WORD                  an uninflected class: prepositions

All of a class's lines have the same number of forms; ``_`` in a form is a space
(``in_front_of``). ``noun`` is the class the ``last noun`` baseline reads. A malformed line of
either file raises ``FairseqTreeError`` as ``FILE:LINE: reason``.

The built-in templates and word lists are ``agreement_defaults``'s, with its conditions.

The first word is capitalized (``capitalize``), as every prefix of the training data starts a
sentence. Items are drawn with ``random.Random`` seeded by the seed, the template and the cell,
so the output is the same on every run and one template's items do not change when another is
added; duplicates are redrawn while the template's combinations allow ("The king" has only as
many as there are nouns).
"""

import collections
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass

from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.trees.agreement import PLURAL, SINGULAR

NUMBERS = {"sg": SINGULAR, "pl": PLURAL}
ROLES = ("subj", "attr", "sg", "pl")
SHORTHANDS = {"subj": ("noun", "subj"), "attr": ("noun", "attr")}
NOUN_CLASS = "noun"  # the class the "last noun" baseline reads
SLOT = re.compile(r"\{([^{}]*)\}")
REDRAWS = 20  # draws of a new item before a duplicate is taken


@dataclass(frozen=True)
class Slot:
    """A place for a word of ``word_class``; ``role`` None (uninflected), or the number it
    takes: ``subj``, ``attr``, ``sg`` or ``pl``."""

    word_class: str
    role: str | None


@dataclass(frozen=True)
class Template:
    """One line of a template file: its pattern as words (str) and slots."""

    condition: str
    name: str
    parts: tuple  # of str and Slot
    where: str  # FILE:LINE

    @property
    def has_attractor(self) -> bool:
        return any(isinstance(part, Slot) and part.role == "attr" for part in self.parts)


@dataclass(frozen=True)
class Item:
    """One targeted example: ``prefix`` (space-separated words) and the verb's number."""

    prefix: str
    label: str  # SINGULAR or PLURAL: the subject's number
    condition: str
    attractor: bool
    template: str
    last_noun: str | None  # the number of the last noun slot ("most recent noun" predicts it)


@dataclass
class WordLists:
    """Each class's entries: (word,) for an uninflected class, (singular, plural) otherwise."""

    classes: dict  # class -> list of tuples of forms
    where: dict  # (class, forms) -> FILE:LINE

    def inflected(self, word_class: str) -> bool:
        return len(self.classes[word_class][0]) == 2


def content_lines(text: str, source: str) -> Iterable[tuple[str, list[str]]]:
    """(FILE:LINE, whitespace-separated fields) of each line that is not blank or a comment."""
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip() and not line.lstrip().startswith("#"):
            yield f"{source}:{number}", line.split()


def read_words(text: str, source: str = "<words>") -> WordLists:
    """The word lists of ``text`` (the module docstring's format); ``source`` names it in
    errors."""
    words = WordLists({}, {})
    for where, fields in content_lines(text, source):
        if len(fields) not in (2, 3):
            raise FairseqTreeError(f"{where}: {len(fields)} fields, expected CLASS SINGULAR "
                                   "PLURAL or CLASS WORD")
        word_class, forms = fields[0], tuple(form.replace("_", " ") for form in fields[1:])
        if word_class in SHORTHANDS:
            raise FairseqTreeError(f"{where}: {word_class!r} is a slot's shorthand, not a class")
        entries = words.classes.setdefault(word_class, [])
        if entries and len(entries[0]) != len(forms):
            first = words.where[(word_class, entries[0])]
            raise FairseqTreeError(f"{where}: {len(forms)} forms, but class {word_class!r} has "
                                   f"{len(entries[0])} ({first})")
        if (word_class, forms) in words.where:
            raise FairseqTreeError(f"{where}: {' '.join(forms)!r} is already in class "
                                   f"{word_class!r} ({words.where[(word_class, forms)]})")
        entries.append(forms)
        words.where[(word_class, forms)] = where
    if not words.classes:
        raise FairseqTreeError(f"{source}: no words")
    return words


def parse_slot(spec: str, where: str) -> Slot:
    """``CLASS``, ``CLASS:ROLE``, or a shorthand (``subj``, ``attr``) as a Slot."""
    if spec in SHORTHANDS:
        return Slot(*SHORTHANDS[spec])
    word_class, sep, role = spec.partition(":")
    if not word_class or (sep and role not in ROLES):
        raise FairseqTreeError(f"{where}: slot {{{spec}}}: expected {{CLASS}} or {{CLASS:ROLE}} "
                               f"with ROLE one of {', '.join(ROLES)}")
    return Slot(word_class, role if sep else None)


def parse_pattern(words: list[str], where: str) -> tuple:
    """A pattern's words as words and Slots; a word is one slot or holds no brace."""
    parts = []
    for word in words:
        match = SLOT.fullmatch(word)
        if match:
            parts.append(parse_slot(match.group(1), where))
        elif "{" in word or "}" in word:
            raise FairseqTreeError(f"{where}: {word!r}: a slot is a whole word, {{CLASS}} or "
                                   "{CLASS:ROLE}")
        else:
            parts.append(word)
    if not any(isinstance(part, Slot) and part.role == "subj" for part in parts):
        raise FairseqTreeError(f"{where}: no subject slot ({{subj}} or {{CLASS:subj}}): the "
                               "label is the subject's number")
    return tuple(parts)


def read_templates(text: str, source: str = "<templates>") -> list[Template]:
    """The templates of ``text`` (the module docstring's format); ``source`` names it in
    errors."""
    templates, seen = [], {}
    for where, fields in content_lines(text, source):
        if len(fields) < 3:
            raise FairseqTreeError(f"{where}: {len(fields)} fields, expected CONDITION "
                                   "TEMPLATE-ID PATTERN...")
        condition, name, pattern = fields[0], fields[1], fields[2:]
        if name in seen:
            raise FairseqTreeError(f"{where}: template id {name!r} is already used ({seen[name]})")
        seen[name] = where
        templates.append(Template(condition, name, parse_pattern(pattern, where), where))
    if not templates:
        raise FairseqTreeError(f"{source}: no templates")
    return templates


def check_templates(templates: list[Template], words: WordLists):
    """Each slot's class is in ``words``, inflected where it takes a number and not where it
    does not, with as many words as the template's slots of that class need."""
    for template in templates:
        slots = [part for part in template.parts if isinstance(part, Slot)]
        for slot in slots:
            if slot.word_class not in words.classes:
                raise FairseqTreeError(f"{template.where}: no word list of class "
                                       f"{slot.word_class!r} (the lists have "
                                       f"{', '.join(sorted(words.classes))})")
            if not words.classes[slot.word_class]:
                raise FairseqTreeError(f"{template.where}: every word of class "
                                       f"{slot.word_class!r} was left out as rare")
            if words.inflected(slot.word_class) != (slot.role is not None):
                raise FairseqTreeError(
                    f"{template.where}: {{{slot.word_class}"
                    f"{'' if slot.role is None else ':' + slot.role}}}: class "
                    f"{slot.word_class!r} is " + ("inflected: give {CLASS:ROLE}" if
                                                  slot.role is None else "uninflected: give "
                                                  "{CLASS}"))
        for word_class, needed in collections.Counter(s.word_class for s in slots).items():
            if len(words.classes[word_class]) < needed:
                raise FairseqTreeError(f"{template.where}: {needed} slots of class "
                                       f"{word_class!r}, but it has "
                                       f"{len(words.classes[word_class])} words")


def token_counts(lines: Iterable[str]) -> collections.Counter:
    """How often each whitespace-separated token occurs in ``lines``."""
    counts = collections.Counter()
    for line in lines:
        counts.update(line.split())
    return counts


def frequent_words(words: WordLists, counts: collections.Counter,
                   min_count: int) -> tuple[WordLists, dict]:
    """The entries whose every form (each of its words) occurs ``min_count`` times or more in
    ``counts``, as written (case counts); and the dropped ones by class, each with its forms'
    counts. A class left empty stays, empty: ``check_templates`` then names the template that
    needs it."""
    kept, dropped = WordLists({}, dict(words.where)), {}
    for word_class, entries in words.classes.items():
        kept.classes[word_class] = []
        for forms in entries:
            seen = {form: min(counts[w] for w in form.split()) for form in forms}
            if min(seen.values()) >= min_count:
                kept.classes[word_class].append(forms)
            else:
                dropped.setdefault(word_class, []).append(seen)
    return kept, dropped


def fill(template: Template, numbers: dict[str, str], words: WordLists,
         rng: random.Random) -> tuple[list[str], str | None]:
    """The template's words with each slot drawn (distinct words per class), and the number
    of its last ``noun`` slot."""
    slots = [part for part in template.parts if isinstance(part, Slot)]
    draws = {word_class: iter(rng.sample(words.classes[word_class], count))
             for word_class, count in collections.Counter(s.word_class for s in slots).items()}
    out, last_noun = [], None
    for part in template.parts:
        if not isinstance(part, Slot):
            out.append(part)
            continue
        forms = next(draws[part.word_class])
        number = numbers.get(part.role, NUMBERS.get(part.role))
        out.append(forms[0] if number is None else forms[number == PLURAL])
        if part.word_class == NOUN_CLASS:
            last_noun = number
    return out, last_noun


def template_items(template: Template, label: str, attractor: bool, count: int,
                   words: WordLists, seed: int, capitalize: bool) -> list[Item]:
    """``count`` items of ``template`` whose subject has number ``label``, the attractor the
    other number (``attractor``) or the same; a drawn duplicate is drawn again up to
    ``REDRAWS`` times."""
    rng = random.Random(f"{seed}:{template.name}:{label}:{int(attractor)}")
    other = PLURAL if label == SINGULAR else SINGULAR
    numbers = {"subj": label, "attr": other if attractor else label}
    items, seen = [], set()
    for _ in range(count):
        for _ in range(REDRAWS):
            prefix_words, last_noun = fill(template, numbers, words, rng)
            prefix = " ".join(prefix_words)
            if prefix not in seen:
                break
        seen.add(prefix)
        if capitalize:
            prefix = prefix[:1].upper() + prefix[1:]
        items.append(Item(prefix, label, template.condition, attractor, template.name,
                          last_noun))
    return items


def shares(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` counts that differ by one at most, the larger first."""
    return [total // parts + (k < total % parts) for k in range(parts)]


def conditions(templates: list[Template]) -> list[str]:
    """The templates' conditions in the order of their first template."""
    return list(dict.fromkeys(template.condition for template in templates))


def generate(templates: list[Template], words: WordLists, per_cell: int = 300, seed: int = 1,
             capitalize: bool = True) -> list[Item]:
    """``per_cell`` items in each condition's cell without an attractor and (where a template
    has ``:attr`` slots) with one: half singular subjects, half plural, and each number's half
    split evenly over the cell's templates. Ordered by condition, cell, template, number."""
    if per_cell < 2 or per_cell % 2:
        raise FairseqTreeError(f"{per_cell} items a cell: give an even number, half singular "
                               "and half plural")
    check_templates(templates, words)
    items = []
    for condition in conditions(templates):
        for attractor in (False, True):
            cell = [t for t in templates if t.condition == condition and
                    (t.has_attractor or not attractor)]
            for template, count in zip(cell, shares(per_cell // 2, len(cell)) if cell else []):
                for label in (SINGULAR, PLURAL):
                    items += template_items(template, label, attractor, count, words, seed,
                                            capitalize)
    return items


ITEM_COLUMNS = ("prefix", "label", "condition", "attractor", "template", "last_noun")


def format_items(items: list[Item]) -> str:
    """The items as TSV with a header line (``ITEM_COLUMNS``; attractor yes/no, last_noun "-"
    where the template has no noun slot)."""
    lines = ["\t".join(ITEM_COLUMNS)]
    for item in items:
        lines.append("\t".join([item.prefix, item.label, item.condition,
                                "yes" if item.attractor else "no", item.template,
                                item.last_noun or "-"]))
    return "\n".join(lines) + "\n"


def read_items(text: str, source: str = "<items>") -> list[Item]:
    """Items written by ``format_items`` (so that other models, of other recipes, read the same
    ones); ``FairseqTreeError`` naming the line that is not an item."""
    lines = text.splitlines()
    if not lines or tuple(lines[0].split("\t")) != ITEM_COLUMNS:
        raise FairseqTreeError(f"{source}:1: expected the header {' '.join(ITEM_COLUMNS)!r}")
    items = []
    for number, line in enumerate(lines[1:], 2):
        fields = line.split("\t")
        if len(fields) != len(ITEM_COLUMNS) or fields[1] not in (SINGULAR, PLURAL) or \
                fields[3] not in ("yes", "no") or fields[5] not in (SINGULAR, PLURAL, "-") or \
                not fields[0].strip():
            raise FairseqTreeError(
                f"{source}:{number}: expected {len(ITEM_COLUMNS)} tab-separated fields (prefix, "
                f"label {SINGULAR}/{PLURAL}, condition, attractor yes/no, template, last noun "
                f"{SINGULAR}/{PLURAL}/-)")
        items.append(Item(fields[0], fields[1], fields[2], fields[3] == "yes", fields[4],
                          None if fields[5] == "-" else fields[5]))
    if not items:
        raise FairseqTreeError(f"{source}: no items")
    return items


def cell_name(condition: str, attractor: bool) -> str:
    """The row of a condition's cell in the reports: ``pp``, ``pp + attractor``."""
    return f"{condition} + attractor" if attractor else condition
