"""The built-in templates and word lists of the targeted agreement evaluation
(``agreement_templates``, whose formats these are): Marvin & Linzen's (EMNLP 2018) agreement
conditions, with English the agreement recipe's Bibles use often (both forms of each noun and
verb; ``bench/agreement_targeted.py`` drops those rare in a recipe's training text). The
conditions, each with and without an attractor (example prefix: label, "0" singular, "1"
plural):

* ``simple``: "The king" (0). With an attractor, a fronted PP *before* the subject,
  "Near the prophets , the king" (0): in simple agreement nothing comes between subject and
  verb, so the attractor tests a "first noun" heuristic, as the PP cells test "most recent
  noun". Its cell without an attractor holds both frames ("The king", "Near the prophet , the
  king"), half each.
* ``pp``: across one prepositional phrase, "The servant of the kings" (0).
* ``pp-pp``: across two, "The sons of the king with the prophet" (1); both nouns are of the
  attractor's number.
* ``subject-relative``: across a subject relative clause, "The priest that loves the kings" (0);
  the clause's verb agrees with the subject, as in Marvin & Linzen.
* ``object-relative``: across an object relative clause, "The priest that the kings love" (0);
  its verb agrees with the attractor.
* ``object-relative-no-that``: the same without *that*, "The priest the kings love" (0).
* ``sentential-complement``: "The prophet says that the kings" (1): the subject of the
  complement; the main clause's subject is the attractor, and its verb agrees with it.
* ``vp-coordination``: "The elder weeps and" (0), Marvin & Linzen's short VP coordination
  ("The author laughs and swims"): the next word is a second verb whose subject is the first
  verb's, so the label is the subject's number. With an attractor the first verb takes an object
  of the other number, "The elder loves the kings and" (0), as in their long VP coordination.
  The second verb of a coordination has no subject of its own in a dependency parse;
  ``agreement``'s rule 2 gives it the first verb's, so the agreement recipe makes such examples
  from its Bibles (recipes built before that rule left them out as "no subject").
"""

TEMPLATES = """\
# condition               template id               pattern
simple                    simple                    the {subj}
simple                    simple-fronted            {fronted} the {attr} , the {subj}
pp                        pp                        the {subj} {prep} the {attr}
pp-pp                     pp-pp                     the {subj} {prep} the {attr} {prep} the {attr}
subject-relative          subject-relative          the {subj} that {tverb:subj} the {attr}
object-relative           object-relative           the {subj} that the {attr} {tverb:attr}
object-relative-no-that   object-relative-no-that   the {subj} the {attr} {tverb:attr}
sentential-complement     sentential-complement     the {attr} {cverb:attr} that the {subj}
vp-coordination           vp-coordination           the {subj} {iverb:subj} and
vp-coordination           vp-coordination-object    the {subj} {tverb:subj} the {attr} and
"""

WORDS = """\
# Persons, subjects and attractors (both forms common in the English Bibles).
noun  king      kings
noun  prophet   prophets
noun  priest    priests
noun  servant   servants
noun  son       sons
noun  brother   brothers
noun  daughter  daughters
noun  man       men
noun  woman     women
noun  child     children
noun  elder     elders
noun  angel     angels
noun  disciple  disciples
noun  shepherd  shepherds
noun  stranger  strangers
noun  soldier   soldiers
noun  enemy     enemies
noun  friend    friends
noun  father    fathers
noun  ruler     rulers
noun  captain   captains
noun  widow     widows
noun  apostle   apostles
noun  scribe    scribes
noun  master    masters
noun  wife      wives
noun  prince    princes
# Transitive verbs (subject relatives, object relatives, VP coordination with an object).
tverb  loves     love
tverb  knows     know
tverb  hates     hate
tverb  sees      see
tverb  hears     hear
tverb  fears     fear
tverb  seeks     seek
tverb  serves    serve
tverb  keeps     keep
tverb  follows   follow
tverb  calls     call
tverb  blesses   bless
tverb  finds     find
tverb  sends     send
tverb  gives     give
tverb  takes     take
tverb  makes     make
tverb  brings    bring
tverb  receives  receive
# Intransitive verbs (VP coordination).
iverb  weeps     weep
iverb  sleeps    sleep
iverb  rejoices  rejoice
iverb  comes     come
iverb  goes      go
iverb  sits      sit
iverb  stands    stand
iverb  dies      die
iverb  prays     pray
iverb  speaks    speak
iverb  waits     wait
iverb  walks     walk
iverb  mourns    mourn
iverb  eats      eat
# Verbs of saying and knowing, with a that-complement (sentential complements).
cverb  says      say
cverb  knows     know
cverb  believes  believe
cverb  sees      see
cverb  hears     hear
cverb  thinks    think
cverb  declares  declare
cverb  swears    swear
# Prepositions after a noun (PP conditions), and before a fronted PP (simple + attractor).
prep     of
prep     with
prep     from
prep     among
prep     near
prep     beside
prep     behind
fronted  near
fronted  beside
fronted  behind
fronted  before
fronted  among
fronted  with
"""
