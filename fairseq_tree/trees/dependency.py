"""Phrase structure from a dependency parse: the conversion behind ``--parser spacy``.

A dependency parse gives every word its head (0-based positions here, -1 at a root) and a
relation. ``dependency_to_tree`` turns it into a bracketed tree in three steps, each a function:

1. ``projectivize``: arcs that cross others are lifted, so that every word's subtree covers a
   contiguous stretch of the sentence (``subtree_spans``);
2. every word with dependents heads one phrase over its subtree's yield: its dependents'
   phrases (or words) and its own preterminal, in sentence order; a word without dependents is
   only its preterminal ``(TAG word)``. There is no bar level: the conversion is "flat", one
   phrase per head (Collins et al., 1999; Xia and Palmer, 2001, call it the flattest tree the
   dependencies allow), so a tree has exactly one phrase per word that has dependents;
3. ``phrase_label`` names a phrase from its head's universal part of speech and the relations of
   its dependents (the table is ``PHRASE_OF_POS`` and the two rules in that function).

Several roots (a parser given one sentence should not make them, but nothing forbids it) go
under one ``TOP`` node. The leaves are the words given, always; ``fairseq_tree.parsing``'s
backends check that again before a tree is written.
"""

from collections.abc import Sequence

from fairseq_tree.trees.bracketed import Tree
from fairseq_tree.trees.normal_form import escape_token

MULTI_ROOT_LABEL = "TOP"
# CoNLL-U has no empty sentence: an empty input line's place is a block with only this comment.
EMPTY_LINE_COMMENT = "# empty input line"
# The label of a phrase by its head's universal part of speech (UD's UPOS), unless a rule of
# ``phrase_label`` comes first. A noun phrase with a case marker is a PP: UD makes the noun, not
# the preposition, the head of "in the beginning" (English spaCy models, trained on ClearNLP's
# labels, make the preposition the head instead: ADP gives PP there).
PHRASE_OF_POS = {
    "VERB": "VP", "AUX": "VP",
    "NOUN": "NP", "PROPN": "NP", "PRON": "NP", "DET": "NP",
    "NUM": "QP",
    "ADJ": "ADJP",
    "ADV": "ADVP",
    "ADP": "PP",
    "SCONJ": "SBAR",
    "PART": "PRT",
    "INTJ": "INTJ",
}
OTHER_PHRASE = "X"
# Dependents that make a head's phrase a clause or a PP, by relation (lower-cased), UD's names
# and ClearNLP's (English spaCy models) both. Only the expletive subjects among UD's ``expl``
# relations count: French ``expl:comp`` / ``expl:pass`` / ``expl:pv`` are the clitic "se".
SUBJECT_RELATIONS = frozenset({"nsubj", "nsubjpass", "csubj", "csubjpass"})  # any subtype
EXPLETIVE_SUBJECTS = frozenset({"expl", "expl:subj", "expl:impers"})
SUBORDINATOR_RELATIONS = frozenset({"mark"})
# A case marker makes a nominal phrase a PP only when it is a preposition (ADP): English models
# attach the possessive 's (POS, PART) as ``case`` too, and "the king 's" is a noun phrase.
CASE_RELATIONS = frozenset({"case"})
NOMINAL_POS = frozenset({"NOUN", "PROPN", "PRON", "DET", "NUM"})


def phrase_label(head_pos: str, dependents: Sequence[tuple[str, str]]) -> str:
    """The label of the phrase a word of part of speech ``head_pos`` heads, given its
    dependents' ``(relation, part of speech)``.

    In order: a subordinator among the dependents (``mark``) makes an SBAR; a subject (``nsubj``,
    ``csubj``, an expletive subject, and their passive subtypes) an S, whatever the head (UD makes
    the predicate adjective or noun the head of a copula clause); a nominal head with a
    prepositional case marker (``case``, ADP) a PP; otherwise ``PHRASE_OF_POS[head_pos]``, or X
    for the rest (punctuation, symbols, X).
    """
    relations = {relation.lower() for relation, _ in dependents}
    bases = {relation.split(":")[0] for relation in relations}  # nsubj:pass -> nsubj
    if bases & SUBORDINATOR_RELATIONS:
        return "SBAR"
    if relations & EXPLETIVE_SUBJECTS or bases & SUBJECT_RELATIONS:
        return "S"
    if head_pos in NOMINAL_POS and any(relation.lower() in CASE_RELATIONS and pos == "ADP"
                                       for relation, pos in dependents):
        return "PP"
    return PHRASE_OF_POS.get(head_pos, OTHER_PHRASE)


def ancestors(heads: Sequence[int], word: int) -> set:
    """The words above ``word`` (its head, its head's head, ...); -1 stands for the root."""
    above, current = set(), heads[word]
    while current >= 0 and current not in above:
        above.add(current)
        current = heads[current]
    above.add(-1)
    return above


def is_projective(heads: Sequence[int], word: int) -> bool:
    """Whether the arc into ``word`` is projective: every word between it and its head descends
    from the head. An arc from the root (head -1, read as a word before the sentence) always is."""
    head = heads[word]
    if head < 0:
        return True
    low, high = min(head, word), max(head, word)
    return all(head in ancestors(heads, between) for between in range(low + 1, high))


def projectivize(heads: Sequence[int]) -> list[int]:
    """The heads with every non-projective arc lifted (Kahane et al., 1998; Nivre and Nilsson,
    2005, "pseudo-projective parsing", without their label encoding).

    While an arc is non-projective, the shortest one (the leftmost of the shortest) is lifted:
    its dependent is re-attached to its head's head. Lifting only moves a word up, and an arc
    from the root is projective, so it ends; the result is a projective tree in which every word
    still descends from its original head's ancestors. Projective input comes back unchanged.
    """
    heads = list(heads)
    while True:
        crossing = [word for word in range(len(heads)) if not is_projective(heads, word)]
        if not crossing:
            return heads
        word = min(crossing, key=lambda w: (abs(heads[w] - w), w))
        heads[word] = heads[heads[word]]


def dependents_of(heads: Sequence[int]) -> list[list[int]]:
    """Each word's dependents, in sentence order."""
    dependents: list[list[int]] = [[] for _ in heads]
    for word, head in enumerate(heads):
        if head >= 0:
            dependents[head].append(word)
    return dependents


def subtree_spans(heads: Sequence[int]) -> list[tuple[int, int]]:
    """``(first, last + 1)`` of each word's subtree: its yield when the tree is projective."""
    first, last = list(range(len(heads))), list(range(len(heads)))
    for word in range(len(heads)):
        for above in ancestors(heads, word) - {-1}:
            first[above] = min(first[above], word)
            last[above] = max(last[above], word)
    return [(start, end + 1) for start, end in zip(first, last)]


def dependency_to_tree(words: Sequence[str], tags: Sequence[str], pos: Sequence[str],
                       heads: Sequence[int], relations: Sequence[str]) -> Tree:
    """The phrase-structure tree of a dependency parse (see the module's docstring).

    ``words`` are the leaves, ``tags`` their preterminals, ``pos`` their universal parts of
    speech and ``relations`` their arcs' labels (both for ``phrase_label``), ``heads`` 0-based
    with -1 at a root. Non-projective arcs are lifted first (``projectivize``).
    """
    if not words:
        raise ValueError("a tree needs at least one word")
    heads = projectivize(heads)
    dependents = dependents_of(heads)
    node: list = [None] * len(words)
    # Bottom-up without recursion: a word's node is made after all its dependents' nodes.
    order, stack = [], [word for word, head in enumerate(heads) if head < 0]
    while stack:
        word = stack.pop()
        order.append(word)
        stack.extend(dependents[word])
    for word in reversed(order):
        preterminal = Tree(tags[word], [escape_token(words[word])])
        if not dependents[word]:
            node[word] = preterminal
            continue
        children = sorted([*dependents[word], word])
        node[word] = Tree(phrase_label(pos[word], [(relations[d], pos[d])
                                                   for d in dependents[word]]),
                          [preterminal if child == word else node[child] for child in children])
    roots = [word for word, head in enumerate(heads) if head < 0]
    if len(roots) == 1:
        return node[roots[0]]
    return Tree(MULTI_ROOT_LABEL, [node[root] for root in roots])


def to_conllu(words: Sequence[str], tags: Sequence[str], pos: Sequence[str],
              heads: Sequence[int], relations: Sequence[str],
              features: Sequence[str] | None = None) -> str:
    """The parse as CoNLL-U token lines (https://universaldependencies.org/format.html), without
    the blank line that ends a sentence; heads as given (not projectivized), 1-based, 0 at the
    root. A second root, which CoNLL-U does not allow, is attached to the first as ``dep``."""
    roots = [word for word, head in enumerate(heads) if head < 0]
    lines = []
    for word, form in enumerate(words):
        head, relation = heads[word] + 1, relations[word]
        if heads[word] < 0:
            head, relation = (0, "root") if word == roots[0] else (roots[0] + 1, "dep")
        feats = (features[word] if features else "") or "_"
        lines.append("\t".join([str(word + 1), form, "_", pos[word] or "_", tags[word] or "_",
                                feats, str(head), relation, "_", "_"]))
    return "\n".join(lines)
