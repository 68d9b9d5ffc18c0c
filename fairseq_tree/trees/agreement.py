"""Subject-verb agreement examples from a dependency parse, as Linzen, Dupoux and Goldberg (TACL
2016) made theirs from parsed Wikipedia: for every present-tense verb with a nominal subject
before it, the words before the verb are the input and the verb's number the label; the nouns
between the subject and the verb whose number differs from the subject's are *attractors*.

The parse is English with Penn Treebank tags (VBZ, VBP, NN, NNS, ...) and ClearNLP / Stanford
relations (``nsubj``, ``nsubjpass``, ``aux``, ``auxpass``; UD's ``nsubj:pass``, ``aux:pass``
and ``cop`` are read too), as spaCy's English pipelines give. A sentence is a list of ``Word``.

Which verbs make an example (``agreement_cases``); every verb tagged VBZ or VBP that is left out
is counted under the reason in brackets, the first that applies in this order (``verb_case``):

1. Linzen et al.'s length limit: sentences of more than ``max_length`` words are left out
   ["sentence too long"].
2. The subject is the verb's own ``nsubj``/``nsubjpass`` dependent; for an auxiliary or a
   copula (``aux``, ``auxpass``, ``cop``: "the keys *are* lost") the subject of its head; for a
   verb coordinated with an earlier verb (``conj``) and without a subject of its own, that
   verb's ("the author near the senators laughs and *swims*": Marvin & Linzen's VP
   coordination, whose second verb a dependency parse gives no subject) ["no subject":
   imperatives, and verbs whose subject the parser attached elsewhere].
3. The subject comes before the verb ["subject after the verb": questions, inversions].
4. The subject is a noun (NN, NNP singular; NNS, NNPS plural) or a personal pronoun of
   ``PRONOUN_VERB_TAG`` ["subject not a noun or personal pronoun": relative and demonstrative
   pronouns, numbers, ..., whose number is not in their tag].
5. The tagger's traps, where a VBP agrees with nothing: a verb with a modal or *to* beside it
   (a bare infinitive tagged VBP), and a bare form under *let*, *make*, *see*, *hear*, *help*,
   *bid*, *watch*, *feel* or *behold* ("let the dry land *appear*") with no complementizer
   ["bare infinitive"].
6. The subject's number and the verb's agree by their tags ["subject and verb disagree": a
   tagging error, or a construction that does not agree by form: coordinated subjects
   "destruction and misery *are*", subjunctives "if any man *love*", "God *forbid*"]. A pronoun
   agrees when its verb tag is the verb's (he/she/it: VBZ; I/you/we/they: VBP).

The label is the verb's form: ``SINGULAR`` for VBZ, ``PLURAL`` for VBP ("I am", "you are" are
VBP: pronoun examples are about form, which is why they are reported apart).

Made examples (``coordination_sentence``, for training: the recipe's ``--coordination-examples``):
a sentence rarely coordinates two present-tense verbs with a subject of the other number between
them, so the examples hold few of what Marvin & Linzen's VP coordination asks ("the author near
the senators laughs and *swims*"). A verb that makes an example (not an auxiliary, not already
coordinated) makes a second sentence: its words up to the end of the verb's phrase
(``phrase_end``), *and*, and the verb again as its conjunct; rule 2 gives that verb the first's
subject, and the label is the subject's number, whatever the tense of the verb that follows.
``MADE_CLAUSES`` says which verbs do: those of the main clause (the sentence's root, or a
conjunct of it), or those of every clause (relative, adverbial and complement clauses too: "the
word that the people hear and" takes "people", the very prefix of an object relative but for
*and*, which the models were seen to confuse with it). ``MADE_VERBS`` says which verbs' examples
make them: the present tense's (VBZ, VBP: the verb before *and* shows the label, so copying its
number answers every made example, and that shortcut is wrong for the verb of a clause below
one of the other number, "you know that no murderer *has*"), the past tense's (VBD, the
past-tense examples' verbs: "the author near the senators laughed and", labelled by the
subject's number; nothing before *and* shows it but the subject), or both.

Past-tense examples (``past_tense_cases``, for training: the recipe's ``--past-tense-examples``):
a past-tense verb (VBD) shows no number ("the author near the senators laughed"), but the
sentence before it still has a subject whose number a model must find. Every VBD that rules 1-5
keep makes an example labelled by its subject's number (a pronoun's by the verb tag it takes, as
above), so that the text's own coordinations ("he arose and went": rule 2) and the clauses
after *and* with a subject of their own ("... and the people went") teach both sides of *and*
in the text's own proportions. Rule 6 reads the only past forms that agree: a noun subject
whose number is not that of *was* (singular) or *were* (plural) leaves its verb out.

Contrast copies (for training: the recipe's ``--contrast-copies``): a made coordination's verb
has the number of the verb before *and*, so the made examples reward copying the number of the
nearest present-tense verb before the one to predict (``last_verb_number``), which is wrong for
the verb of a clause below it ("you know that no murderer *has*"). An example whose nearest
present-tense verb has the other number (``AgreementCase.last_verb`` not its label) is one
against that shortcut, and the recipe can write it more than once.

Rule 6 is a selection by the parser and tagger as much as a filter of their errors: the verbs
it drops are those where the parse a model would read points at a subject of the other number.
``agreement_cases`` can hand them back (``disagreeing``), labelled by the verb's form as every
example is, so that a model's accuracy on them measures what the selection hides.
"""

import collections
from dataclasses import dataclass, replace

from fairseq_tree.trees.dependency import subtree_spans

SINGULAR, PLURAL = "0", "1"  # fairseq's class symbols, in the order of the class names
CLASS_NAMES = ["singular (VBZ)", "plural (VBP)"]
VERB_NUMBER = {"VBZ": SINGULAR, "VBP": PLURAL}
NOUN_NUMBER = {"NN": SINGULAR, "NNP": SINGULAR, "NNS": PLURAL, "NNPS": PLURAL}
# Personal pronouns and the verb tag they take; "thou" (KJV: "thou art", "thou sayest") is left
# out: its verb forms are neither.
PRONOUN_VERB_TAG = {"he": "VBZ", "she": "VBZ", "it": "VBZ",
                    "i": "VBP", "you": "VBP", "we": "VBP", "they": "VBP", "ye": "VBP"}
SUBJECT_RELATIONS = {"nsubj", "nsubjpass", "nsubj:pass"}
AUXILIARY_RELATIONS = {"aux", "auxpass", "aux:pass", "cop"}
# The relations of a verb's dependents that continue its phrase to the right (objects,
# particles, complements, prepositional and adverbial phrases): where a conjunct could follow.
PHRASE_RELATIONS = {"dobj", "obj", "iobj", "dative", "attr", "acomp", "oprd", "prt", "prep",
                    "advmod", "npadvmod", "xcomp", "agent", "obl", "compound:prt"}
# Verbs whose complement is a bare infinitive, which the tagger may call VBP (lemmas).
BARE_INFINITIVE_GOVERNORS = {"let", "make", "see", "hear", "help", "bid", "watch", "feel",
                             "behold"}
# VBP forms that are not the bare infinitive: only "be" has them.
FINITE_ONLY_FORMS = {"am", "are", "art"}
PAST_TENSE = "VBD"
# The past forms that agree with a noun subject: rule 6 of the past-tense examples.
PAST_FORM_NUMBER = {"was": SINGULAR, "were": PLURAL}


# The columns of text/{split}.meta, one line per example (tab-separated): where the sentence is
# (bible.db:VERSION BOOK CHAPTER:VERSE, or FILE:LINE), "noun" or "pronoun", attractors, the
# subject-verb distance in words, the subject's position in the input (0-based), the verb, and
# the class of the noun nearest before the verb ("-": none; the most-recent-noun baseline).
AGREEMENT_META = ("source", "subject_kind", "attractors", "distance", "subject", "verb",
                  "last_noun")
ATTRACTOR_BINS = ("0", "1", "2", "3", "4+")


def attractor_bin(count: int) -> str:
    """0, 1, 2, 3 or 4+: the rows of Linzen et al.'s and the paper's tables."""
    return ATTRACTOR_BINS[min(count, len(ATTRACTOR_BINS) - 1)]


@dataclass(frozen=True)
class Word:
    """One word of a parsed sentence: ``head`` 0-based, -1 at the root."""

    form: str
    tag: str
    head: int
    relation: str
    lemma: str = ""


@dataclass(frozen=True)
class AgreementCase:
    """One example: the input is the sentence's words before ``verb``."""

    verb: int
    subject: int
    label: str  # SINGULAR or PLURAL: the verb's form (a past-tense example's: its subject's)
    subject_kind: str  # "noun" or "pronoun"
    attractors: int  # nouns between subject and verb of the other number
    distance: int  # verb - subject, in words
    last_noun: str | None  # the number of the noun nearest before the verb (Linzen et al.'s
    # heuristic baseline predicts it), None if no noun precedes it
    last_verb: str | None = None  # the number of the present-tense verb nearest before the
    # verb (``last_verb_number``), None if none precedes it


def dependents(words: list[Word], head: int, relations: set[str]) -> list[int]:
    """The words attached to ``head`` by one of ``relations``, in order."""
    return [i for i, word in enumerate(words) if word.head == head and word.relation in relations]


def subject_of(words: list[Word], verb: int) -> int | None:
    """The verb's subject (rule 2): its own; its head's when it is an auxiliary or copula; the
    subject of the verb it is coordinated with (``conj``), up the chain of conjuncts."""
    seen = set()
    while verb not in seen:  # a malformed parse's cycle of conjuncts ends the search
        seen.add(verb)
        own = dependents(words, verb, SUBJECT_RELATIONS)
        if own:
            return own[0]
        head = words[verb].head
        if head < 0:
            return None
        if words[verb].relation in AUXILIARY_RELATIONS:
            of_head = dependents(words, head, SUBJECT_RELATIONS)
            if of_head:
                return of_head[0]
            if words[head].relation != "conj":
                return None
            verb = head  # "the men came and *are* gone": the auxiliary's verb is a conjunct
            continue
        verb = coordinated_with(words, verb)
        if verb is None:
            return None
    return None


def subject_number(word: Word) -> tuple[str, str] | None:
    """(kind, number) of a subject (rule 4): a noun by its tag, a personal pronoun by the verb
    tag it takes; None for any other subject."""
    if word.tag in NOUN_NUMBER:
        return "noun", NOUN_NUMBER[word.tag]
    if word.tag == "PRP" and word.form.lower() in PRONOUN_VERB_TAG:
        return "pronoun", VERB_NUMBER[PRONOUN_VERB_TAG[word.form.lower()]]
    return None


def coordinated_with(words: list[Word], verb: int) -> int | None:
    """The verb that ``verb`` is a conjunct of (``conj`` under a VB* word), or None."""
    head = words[verb].head
    if words[verb].relation == "conj" and head >= 0 and words[head].tag.startswith("VB"):
        return head
    return None


def first_conjunct(words: list[Word], verb: int) -> int:
    """The first verb of ``verb``'s chain of conjuncts (itself when it is none's conjunct)."""
    seen = {verb}
    head = coordinated_with(words, verb)
    while head is not None and head not in seen:
        verb = head
        seen.add(verb)
        head = coordinated_with(words, verb)
    return verb


def is_bare_infinitive(words: list[Word], verb: int) -> bool:
    """Rule 5: a VBZ/VBP that is really a bare infinitive, by what surrounds it (a conjunct by
    what surrounds the verb it is coordinated with: "they shall go and *eat*")."""
    clause = words[verb].head if words[verb].relation in AUXILIARY_RELATIONS else verb
    first = first_conjunct(words, clause) if clause >= 0 else clause
    for head in {verb, clause, first} - {-1}:
        if any(word.head == head and (word.tag == "MD" or word.tag == "TO" or
                                      word.form.lower() == "to" and word.relation == "aux")
               for word in words):
            return True
    word = words[verb]
    if word.tag != "VBP" or word.form.lower() in FINITE_ONLY_FORMS or word.head < 0:
        return False
    governed = first_conjunct(words, verb)
    if words[governed].head < 0:
        return False
    governor = words[words[governed].head]
    lemma = (governor.lemma or governor.form).lower()
    has_complementizer = any(w.head in (verb, governed) and w.relation == "mark" for w in words)
    return lemma in BARE_INFINITIVE_GOVERNORS and not has_complementizer


def attractor_count(words: list[Word], subject: int, verb: int, number: str) -> int:
    """Nouns strictly between the subject and the verb whose number is not ``number`` (Linzen
    et al.'s agreement attractors)."""
    return sum(NOUN_NUMBER.get(words[i].tag, number) != number for i in range(subject + 1, verb))


def last_noun_number(words: list[Word], verb: int) -> str | None:
    """The number of the noun nearest before ``verb``: what "agree with the most recent noun"
    predicts (Linzen et al.'s heuristic baseline)."""
    for word in reversed(words[:verb]):
        if word.tag in NOUN_NUMBER:
            return NOUN_NUMBER[word.tag]
    return None


def last_verb_number(words: list[Word], verb: int) -> str | None:
    """The number of the present-tense verb (VBZ, VBP) nearest before ``verb``: what copying
    the last verb's form predicts, right for a coordinated verb and wrong for the verb of a
    clause below one of the other number."""
    for word in reversed(words[:verb]):
        if word.tag in VERB_NUMBER:
            return VERB_NUMBER[word.tag]
    return None


def phrase_end(words: list[Word], verb: int) -> int | None:
    """The last word of ``verb``'s phrase: the verb and its dependents to its right, with their
    subtrees, up to the first that is not of ``PHRASE_RELATIONS`` (a clause, a conjunct, a
    punctuation mark); None when the phrase is not a contiguous span (a non-projective parse)
    or ends in punctuation."""
    spans = subtree_spans([word.head for word in words])
    end = verb
    for i in range(verb + 1, len(words)):
        if words[i].head != verb:
            continue
        if words[i].relation not in PHRASE_RELATIONS:
            break
        first, after = spans[i]
        if first != end + 1:
            return None
        end = after - 1
    return None if words[end].relation == "punct" else end


MADE_CLAUSES = ("main", "every")
MADE_VERBS = ("present", "past", "both")


def coordination_sentence(words: list[Word], verb: int,
                          clauses: str = "main") -> list[Word] | None:
    """The made sentence of the module docstring for the verb (VBZ, VBP or VBD) at ``verb``: its
    words to the end of the verb's phrase, *and*, and the verb again, a ``conj`` of the first;
    None for an auxiliary or copula, a verb already coordinated (its conjunct makes the real
    example), a verb of a subordinate clause where ``clauses`` is "main", and a phrase
    ``phrase_end`` cannot cut."""
    word = words[verb]
    if word.relation in AUXILIARY_RELATIONS or any(
            w.head == verb and w.relation in ("conj", "cc") for w in words):
        return None
    if clauses == "main" and words[first_conjunct(words, verb)].head >= 0:
        return None
    end = phrase_end(words, verb)
    if end is None:
        return None
    # what the cut leaves behind is gone: a word whose head was there is a root of the made one
    made = [w if w.head <= end else Word(w.form, w.tag, -1, w.relation, w.lemma)
            for w in words[:end + 1]]
    made.append(Word("and", "CC", end + 2, "cc", "and"))
    made.append(Word(word.form, word.tag, verb, "conj", word.lemma))
    return made


DISAGREE = "subject and verb disagree"  # rule 6


def agreement_cases(words: list[Word], max_length: int = 50,
                    left_out: collections.Counter | None = None,
                    disagreeing: list | None = None) -> list[AgreementCase]:
    """Every agreement example of one sentence (the module docstring's rules 1-6); the verbs left
    out are counted in ``left_out`` by reason, and those left out by rule 6 alone are appended
    to ``disagreeing`` as cases labelled by the verb's form."""
    cases = []
    for verb, word in enumerate(words):
        if word.tag not in VERB_NUMBER:
            continue
        reason, case = verb_case(words, verb, max_length)
        if not reason:
            cases.append(case)
            continue
        if left_out is not None:
            left_out[reason] += 1
        if reason == DISAGREE and disagreeing is not None:
            disagreeing.append(case)
    return cases


def subject_case(words: list[Word], verb: int, max_length: int
                 ) -> tuple[str, AgreementCase | None]:
    """Rules 1-5 for the verb at ``verb``: (why not, None) or ("", its example labelled by the
    subject's number, the attractors counted against it)."""
    if len(words) > max_length:
        return "sentence too long", None
    subject = subject_of(words, verb)
    if subject is None:
        return "no subject", None
    if subject > verb:
        return "subject after the verb", None
    kind_number = subject_number(words[subject])
    if kind_number is None:
        return "subject not a noun or personal pronoun", None
    if is_bare_infinitive(words, verb):
        return "bare infinitive", None
    kind, number = kind_number
    return "", AgreementCase(verb, subject, number, kind,
                             attractor_count(words, subject, verb, number), verb - subject,
                             last_noun_number(words, verb), last_verb_number(words, verb))


def verb_case(words: list[Word], verb: int, max_length: int) -> tuple[str, AgreementCase | None]:
    """(why not, None) or ("", the example) for the VBZ/VBP at ``verb``; rule 6 gives
    (``DISAGREE``, the case it leaves out), its attractors counted against the subject."""
    reason, case = subject_case(words, verb, max_length)
    if reason:
        return reason, None
    label = VERB_NUMBER[words[verb].tag]
    return ("" if case.label == label else DISAGREE), replace(case, label=label)


def past_tense_case(words: list[Word], verb: int, max_length: int
                    ) -> tuple[str, AgreementCase | None]:
    """(why not, None) or ("", the example) for the VBD at ``verb``: rules 1-5, the label its
    subject's number; a noun subject of *was* or *were* of the other number is left out
    (rule 6)."""
    reason, case = subject_case(words, verb, max_length)
    if not reason and case.subject_kind == "noun" and PAST_FORM_NUMBER.get(
            words[verb].form.lower(), case.label) != case.label:
        return DISAGREE, None
    return reason, case


def past_tense_cases(words: list[Word], max_length: int = 50,
                     left_out: collections.Counter | None = None) -> list[AgreementCase]:
    """The past-tense examples of one sentence (the module docstring's): every VBD that
    ``past_tense_case`` keeps. The verbs left out are counted in ``left_out`` by reason."""
    cases = []
    for verb, word in enumerate(words):
        if word.tag != PAST_TENSE:
            continue
        reason, case = past_tense_case(words, verb, max_length)
        if reason:
            if left_out is not None:
                left_out[reason] += 1
            continue
        cases.append(case)
    return cases


def made_case(made: list[Word], max_length: int) -> AgreementCase | None:
    """The example of a made coordination's last verb (``coordination_sentence``): a VBZ or VBP
    by ``verb_case``, labelled by its form; a VBD by ``past_tense_case``, by its subject's
    number; None where the rules leave it out (a made sentence over the length limit)."""
    verb = len(made) - 1
    rule = past_tense_case if made[verb].tag == PAST_TENSE else verb_case
    reason, case = rule(made, verb, max_length)
    return None if reason else case
