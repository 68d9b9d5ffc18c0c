#!/usr/bin/env bash
# IWSLT'13 French -> English (Appendix 7.4 of the paper): WIT3's IWSLT 2015 release, en-fr talks.
#
#   bash data-prep/prepare-iwslt13-fr-en.sh        -> $DATA/iwslt13-fr-en/  (DATA=data)
#
# Data: en-fr.tgz of WIT3's 2015-01 release (inside its 2015-01.tgz as 2015-01/texts/en/fr/en-fr.tgz;
# release page https://wit3.fbk.eu/2015-01): en-fr/train.tags.en-fr.{en,fr} for training,
# en-fr/IWSLT15.TED.tst2012.en-fr.{en,fr}.xml as valid and IWSLT15.TED.tst2013 as test.
# Steps, as fairseq's prepare-iwslt14.sh: drop the metadata lines of train.tags; Moses tokenization
# (sacremoses); clean-corpus-n -ratio 1.5, 1-175 tokens (training data only); ’ -> ' in valid/test;
# parse the fr side (cased tokens); lowercase everything (tree leaves too); joint BPE;
# fairseq-tree-preprocess. ref/test.en holds the raw test references.
#
# Environment:
#   IWSLT13_DIR          a folder holding en-fr.tgz, 2015-01.tgz, or the extracted en-fr/ folder
#   IWSLT13_URL          a URL of en-fr.tgz itself (default: none; taken from the release archive)
#   IWSLT13_RELEASE_URL  the release archive 2015-01.tgz (default: WIT3's Google Drive copy,
#                        https://drive.usercontent.google.com/download?id=1Mz-iiRxRqbCVbsYfKZQ6yuAxHNzYTMnI&export=download&confirm=t;
#                        if Drive answers with a web page instead, download it by hand into IWSLT13_DIR)
#   PARSER               default corenlp here: stanza has no French constituency parser
#   and DATA, PARSER_ARGS, BPE_MERGES, WORKERS (see data-prep/common.sh).
set -euo pipefail
source "$(dirname "$0")/common.sh"
export PARSER=${PARSER:-corenlp}
iwslt13 fr en
