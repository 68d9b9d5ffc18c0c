"""The two tasks of McCoy, Frank & Linzen (TACL 2020), "Does syntax need to grow on trees?":
their grammars, the gold tree of every sentence, the hierarchical rule that makes a target and
the linear rule the training data cannot tell from it.

* **tense** (reinflection): ``"my zebra by the yaks swam . PRESENT"`` -> ``"my zebra by the yaks
  swims ."``: with ``PAST`` the sentence itself, with ``PRESENT`` every verb in the present,
  agreeing with its own subject (hierarchical) rather than with the noun nearest before it
  (linear: "swim", after "yaks").
* **question** (formation): ``"my zebra who can swim will giggle . QUEST"`` -> ``"will my zebra
  who can swim giggle ?"``: with ``DECL`` the sentence itself, with ``QUEST`` the main clause's
  auxiliary moved to the front (hierarchical) rather than the first auxiliary (linear: "can my
  zebra who swim will giggle ?").

The grammars follow the paper (NOTES.md, F): NP -> ``Det N`` | ``Det N Prep Det N'`` | ``Det N
RC`` for subjects and objects, the nouns inside a PP or a relative clause unmodified; RC ->
``Rel V_intrans`` | ``Rel Det N' V_trans`` (object relative) | ``Rel V_trans Det N'`` (subject
relative); 13 animal nouns, singular and plural; the question task's verbs after an auxiliary
(can, could, will, would, do/does). The paper leaves the rules' probabilities open: every choice
here is uniform. A tree is ``fairseq_tree.trees.Tree`` in Penn Treebank style:
``(ROOT (S (NP ...) (VP ...) (. .)) (MARK PRESENT))``, its leaves the source tokens.

Everything a scorer needs is read back from a gold tree (``analyze``), so sentences of the same
grammar generated elsewhere score the same way.
"""

import random
from dataclasses import dataclass

from fairseq_tree.trees.bracketed import Tree
from fairseq_tree.trees.bracketed import tree_leaves as leaves

TASKS = ("tense", "question")
MARKERS = {"tense": ("PAST", "PRESENT"), "question": ("DECL", "QUEST")}
MARK_LABEL = "MARK"

DETERMINERS = ("the", "some", "my", "your", "our", "her")
NOUNS = {"newt": "newts", "orangutan": "orangutans", "peacock": "peacocks", "quail": "quails",
         "raven": "ravens", "salamander": "salamanders", "tyrannosaurus": "tyrannosauruses",
         "unicorn": "unicorns", "vulture": "vultures", "walrus": "walruses",
         "xylophone": "xylophones", "yak": "yaks", "zebra": "zebras"}
# lemma: (past, present 3rd singular); the plural present is the lemma
INTRANSITIVE = {"giggle": ("giggled", "giggles"), "smile": ("smiled", "smiles"),
                "sleep": ("slept", "sleeps"), "swim": ("swam", "swims"),
                "wait": ("waited", "waits"), "move": ("moved", "moves"),
                "change": ("changed", "changes"), "read": ("read", "reads"),
                "eat": ("ate", "eats")}
TRANSITIVE = {"entertain": ("entertained", "entertains"), "amuse": ("amused", "amuses"),
              "high_five": ("high_fived", "high_fives"), "applaud": ("applauded", "applauds"),
              "confuse": ("confused", "confuses"), "admire": ("admired", "admires"),
              "accept": ("accepted", "accepts"), "remember": ("remembered", "remembers"),
              "comfort": ("comforted", "comforts")}
PREPOSITIONS = ("around", "near", "with", "upon", "by", "behind", "above", "below")
RELATIVIZERS = {"who": "WP", "that": "WDT"}
# auxiliary: its tag and the subject number it needs (None: either)
AUXILIARIES = {"can": ("MD", None), "could": ("MD", None), "will": ("MD", None),
               "would": ("MD", None), "does": ("VBZ", "sg"), "do": ("VBP", "pl")}
AUXILIARY_TAGS = {"MD", "VBZ", "VBP"}
NOUN_TAGS = {"NN": "sg", "NNS": "pl"}
PAST_TAG = "VBD"

# What modifies an NP's head noun (the constructions the scores are broken down by).
MODIFIERS = ("none", "PP", "RC intransitive", "RC subject", "RC object")

_PAST_LEMMA = {past: lemma for verbs in (INTRANSITIVE, TRANSITIVE)
               for lemma, (past, _) in verbs.items()}
_PRESENT = {lemma: forms[1] for verbs in (INTRANSITIVE, TRANSITIVE)
            for lemma, forms in verbs.items()}


def leaf(tag: str, word: str) -> Tree:
    return Tree(tag, [word])


# ---------------------------------------------------------------------------------------------
# Sampling

def _number(rng: random.Random) -> str:
    return rng.choice(("sg", "pl"))


def _noun_phrase(rng: random.Random, number: str) -> Tree:
    """``Det N``: an unmodified NP of ``number``."""
    noun = rng.choice(sorted(NOUNS))
    word, tag = (noun, "NN") if number == "sg" else (NOUNS[noun], "NNS")
    return Tree("NP", [leaf("DT", rng.choice(DETERMINERS)), leaf(tag, word)])


def _verb(task: str, lemma: str, tense_verbs: dict) -> Tree:
    """A verb as the task's source writes it: past (tense), bare (question: after an auxiliary)."""
    return leaf(PAST_TAG, tense_verbs[lemma][0]) if task == "tense" else leaf("VB", lemma)


def _auxiliary(rng: random.Random, number: str) -> Tree:
    word = rng.choice([w for w, (_, need) in AUXILIARIES.items() if need in (None, number)])
    return leaf(AUXILIARIES[word][0], word)


def _predicate(rng: random.Random, task: str, number: str, transitive: bool,
               object_np: Tree | None) -> Tree:
    """A VP whose subject has ``number``: ``V [NP]``, or ``Aux (VP V [NP])`` in the question
    task."""
    verbs = TRANSITIVE if transitive else INTRANSITIVE
    verb = _verb(task, rng.choice(sorted(verbs)), verbs)
    inner = Tree("VP", [verb] + ([object_np] if object_np is not None else []))
    if task == "tense":
        return inner
    return Tree("VP", [_auxiliary(rng, number), inner])


def _relative_clause(rng: random.Random, task: str, head_number: str, kind: str) -> Tree:
    relativizer = rng.choice(sorted(RELATIVIZERS))
    wh = Tree("WHNP", [leaf(RELATIVIZERS[relativizer], relativizer)])
    if kind == "RC intransitive":
        clause = Tree("S", [_predicate(rng, task, head_number, False, None)])
    elif kind == "RC subject":
        clause = Tree("S", [_predicate(rng, task, head_number, True,
                                       _noun_phrase(rng, _number(rng)))])
    else:  # "RC object": its own subject, of either number
        inner_number = _number(rng)
        clause = Tree("S", [_noun_phrase(rng, inner_number),
                            _predicate(rng, task, inner_number, True, None)])
    return Tree("SBAR", [wh, clause])


def sample_np(rng: random.Random, task: str, number: str, modifier: str | None = None) -> Tree:
    """A subject or object NP of ``number`` with ``modifier`` (one of ``MODIFIERS``; None: drawn
    uniformly)."""
    modifier = modifier or rng.choice(MODIFIERS)
    head = _noun_phrase(rng, number)
    if modifier == "none":
        return head
    if modifier == "PP":
        pp = Tree("PP", [leaf("IN", rng.choice(PREPOSITIONS)), _noun_phrase(rng, _number(rng))])
        return Tree("NP", [head, pp])
    return Tree("NP", [head, _relative_clause(rng, task, number, modifier)])


def sample_sentence(rng: random.Random, task: str, marker: str,
                    subject_modifier: str | None = None) -> Tree:
    """One source tree of ``task`` ending in ``marker``: ``(ROOT (S NP VP (. .)) (MARK m))``."""
    number = _number(rng)
    subject = sample_np(rng, task, number, subject_modifier)
    transitive = rng.random() < 0.5
    object_np = sample_np(rng, task, _number(rng)) if transitive else None
    sentence = Tree("S", [subject, _predicate(rng, task, number, transitive, object_np),
                          leaf(".", ".")])
    return Tree("ROOT", [sentence, leaf(MARK_LABEL, marker)])


# ---------------------------------------------------------------------------------------------
# Reading a gold tree back

@dataclass(frozen=True)
class Analysis:
    """What a gold source tree says: the task, its marker, the subject's modifier, the main
    verb's (tense) or main auxiliary's (question) leaf index, and the number of the main
    subject and of the noun nearest before that index (tense)."""

    task: str
    marker: str
    subject_modifier: str
    main_index: int
    subject_number: str | None
    nearest_noun_number: str | None
    first_auxiliary_index: int | None


def _positions(tree: Tree, start: int = 0, out=None) -> list:
    """(node, index of its first leaf) of every node, preorder."""
    out = [] if out is None else out
    out.append((tree, start))
    index = start
    for child in tree.children:
        if isinstance(child, str):
            index += 1
        else:
            _positions(child, index, out)
            index += len(leaves(child))
    return out


def _head_number(np: Tree) -> str:
    """The number of an NP's head noun: its first base NP's noun."""
    while isinstance(np.children[0], Tree) and np.children[0].label == "NP":
        np = np.children[0]
    return next(NOUN_TAGS[c.label] for c in np.children
                if isinstance(c, Tree) and c.label in NOUN_TAGS)


def _modifier(np: Tree) -> str:
    if len(np.children) == 1 or not (isinstance(np.children[0], Tree)
                                     and np.children[0].label == "NP"):
        return "none"
    modifier = np.children[1]
    if modifier.label == "PP":
        return "PP"
    clause = modifier.children[1]
    if clause.children[0].label == "NP":
        return "RC object"
    verb_phrase = clause.children[0]
    while len(verb_phrase.children) == 2 and verb_phrase.children[0].label in AUXILIARY_TAGS:
        verb_phrase = verb_phrase.children[1]
    return "RC subject" if len(verb_phrase.children) == 2 else "RC intransitive"


class NotOfTheGrammar(ValueError):
    """A tree these grammars cannot have made (the message says what is missing)."""


def analyze(tree: Tree) -> Analysis:
    """Read a source tree of either task (see ``sample_sentence``) back; ``NotOfTheGrammar``
    for any other tree."""
    try:
        sentence, mark = tree.children
        marker = mark.children[0]
        task = next(t for t, markers in MARKERS.items() if marker in markers)
        subject, predicate = sentence.children[0], sentence.children[1]
        if subject.label != "NP" or predicate.label != "VP":
            raise NotOfTheGrammar("the sentence is not (S NP VP .)")
        tagged = [(node.label, start) for node, start in _positions(tree)
                  if len(node.children) == 1 and isinstance(node.children[0], str)]
        main_leaf = predicate.children[0]
        main_index = next(start for node, start in _positions(tree) if node is main_leaf)
        subject_number = _head_number(subject)
        nearest = [tag for tag, start in tagged if tag in NOUN_TAGS and start < main_index]
        auxiliaries = [start for tag, start in tagged if tag in AUXILIARY_TAGS]
    except (ValueError, AttributeError, IndexError, StopIteration, KeyError) as error:
        if isinstance(error, NotOfTheGrammar):
            raise
        raise NotOfTheGrammar(f"not a tree of the tense or question grammar ({error!r})") from None
    return Analysis(task, marker, _modifier(subject), main_index, subject_number,
                    NOUN_TAGS[nearest[-1]] if nearest else None,
                    auxiliaries[0] if auxiliaries else None)


# ---------------------------------------------------------------------------------------------
# Targets

def _verb_subjects(tree: Tree) -> dict[int, str]:
    """{leaf index of each past-tense verb: its own subject's number}: the main verb's subject
    is the main NP; a relative clause's verb takes the clause's own NP (object relative) or
    the NP the clause modifies."""
    numbers = {}

    def visit(node: Tree, start: int, subject_number: str | None):
        index = start
        children = node.children
        if node.label == "S" and isinstance(children[0], Tree) and children[0].label == "NP":
            subject_number = _head_number(children[0])
        for child in children:
            if isinstance(child, str):
                if node.label == PAST_TAG:
                    numbers[index] = subject_number
                index += 1
                continue
            # a relative clause without its own subject: the gap is the NP it modifies
            own = _head_number(node) if child.label == "SBAR" else subject_number
            visit(child, index, own)
            index += len(leaves(child))

    visit(tree, 0, None)
    return numbers


def present(word: str, number: str) -> str:
    lemma = _PAST_LEMMA[word]
    return _PRESENT[lemma] if number == "sg" else lemma


def tense_target(tree: Tree, linear: bool = False) -> list[str]:
    """The target of a tense example: the sentence (PAST), or every verb in the present agreeing
    with its own subject (PRESENT); ``linear``: with the noun nearest before it instead."""
    words = leaves(tree)[:-1]
    if tree.children[1].children[0] == "PAST":
        return words
    subjects = _verb_subjects(tree)
    if linear:
        tags = [node.label for node, _ in _positions(tree)
                if len(node.children) == 1 and isinstance(node.children[0], str)]
        for index in subjects:
            nouns = [NOUN_TAGS[t] for t in tags[:index] if t in NOUN_TAGS]
            subjects[index] = nouns[-1]
    return [present(word, subjects[i]) if i in subjects else word for i, word in enumerate(words)]


def tense_target_tree(tree: Tree) -> Tree:
    """The gold tree of a tense example's target: the source's sentence (its ``S``, without
    the marker) over the target's words, each reinflected verb tagged VBZ (singular subject)
    or VBP (plural)."""
    words = iter(tense_target(tree))
    present_tense = tree.children[1].children[0] == "PRESENT"

    def rewrite(node: Tree) -> Tree:
        if len(node.children) == 1 and isinstance(node.children[0], str):
            word, tag = next(words), node.label
            if present_tense and tag == PAST_TAG:
                tag = "VBZ" if word in _PRESENT.values() else "VBP"
            return leaf(tag, word)
        return Tree(node.label, [rewrite(child) for child in node.children])

    return rewrite(tree.children[0])


def question_target(tree: Tree, linear: bool = False) -> list[str]:
    """The target of a question example: the declarative (DECL), or the question (QUEST): the
    main clause's auxiliary (``linear``: the first auxiliary) moved to the front, ``?`` for
    ``.``."""
    words = leaves(tree)[:-1]
    if tree.children[1].children[0] == "DECL":
        return words
    analysis = analyze(tree)
    moved = analysis.first_auxiliary_index if linear else analysis.main_index
    rest = words[:moved] + words[moved + 1:]
    return [words[moved]] + rest[:-1] + ["?"]


def target(tree: Tree, linear: bool = False) -> list[str]:
    """The target tokens of either task's source tree."""
    task = analyze(tree).task
    return (tense_target if task == "tense" else question_target)(tree, linear)


# ---------------------------------------------------------------------------------------------
# The two rules apart

def scored_index(analysis: Analysis) -> int:
    """Where in the target the word the paper scores is: the main verb (tense; targets keep the
    source's positions) or the first word (question)."""
    return analysis.main_index if analysis.task == "tense" else 0


def key_words(tree: Tree) -> dict:
    """Where the two rules read in a source tree. ``words``: leaf indices of the main subject's
    head noun, and for tense of the noun nearest before the main verb (the linear rule's
    agreement controller) and of the main verb, for questions of the main auxiliary and the
    first one (the linear rule's). ``phrases``: spans [start, end) of leaves of the main
    subject, of its head noun's base NP and (tense) of the nearest noun's base NP.
    ``main_index``: the main verb's or auxiliary's leaf; ``scored_index``: the target position
    of the word the paper scores; ``length``: the source's leaves."""
    analysis = analyze(tree)
    positions = _positions(tree)
    span = {id(node): (start, start + len(leaves(node))) for node, start in positions}
    subject = tree.children[0].children[0]
    head = subject
    while isinstance(head.children[0], Tree) and head.children[0].label == "NP":
        head = head.children[0]
    noun = next(c for c in head.children if isinstance(c, Tree) and c.label in NOUN_TAGS)
    words = {"subject noun": span[id(noun)][0]}
    phrases = {"subject": span[id(subject)], "subject noun": span[id(head)]}
    if analysis.task == "tense":
        nearest = max((start, parent) for parent, _ in positions for child in parent.children
                      if isinstance(child, Tree) and child.label in NOUN_TAGS
                      for start in [span[id(child)][0]] if start < analysis.main_index)
        words["nearest noun"] = nearest[0]
        words["main verb"] = analysis.main_index
        phrases["nearest noun"] = span[id(nearest[1])]
    else:
        words["main auxiliary"] = analysis.main_index
        words["first auxiliary"] = analysis.first_auxiliary_index
    return {"words": words, "phrases": phrases, "main_index": analysis.main_index,
            "scored_index": scored_index(analysis), "length": len(leaves(tree))}


def is_ambiguous(tree: Tree) -> bool:
    """Whether the linear and the hierarchical rule give this example the same target: always
    with PAST or DECL; with PRESENT when the main subject and the noun nearest before the main
    verb have the same number; with QUEST when the main auxiliary is the first one."""
    return target(tree) == target(tree, linear=True)


def is_decisive(tree: Tree) -> bool:
    """Whether the two rules' targets differ in the scored word (``scored_index``): the main
    verb's form, or the question's first word (two auxiliaries of the same word would differ in
    the sentence but not there)."""
    index = scored_index(analyze(tree))
    return target(tree)[index] != target(tree, linear=True)[index]


# ---------------------------------------------------------------------------------------------
# Splits

def sample_example(rng: random.Random, task: str, generalization: bool) -> Tree:
    """One source tree. The training distribution (``generalization`` False): either marker,
    uniformly; with the transforming one (PRESENT, QUEST) only an ambiguous sentence, drawn again
    until it is. The generalization set: the transforming marker, only decisive sentences."""
    marker = MARKERS[task][1] if generalization else rng.choice(MARKERS[task])
    accept = is_decisive if generalization else is_ambiguous
    while True:
        tree = sample_sentence(rng, task, marker)
        if accept(tree):
            return tree
