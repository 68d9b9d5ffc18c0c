#!/usr/bin/env bash
# IWSLT'14 German -> English: fairseq's prepare-iwslt14.sh data with the German side parsed.
#
#   bash data-prep/prepare-iwslt14-de-en.sh        -> $DATA/iwslt14-de-en/  (DATA=data)
#
# Data: WIT3's IWSLT 2014 de-en.tgz (the copy fairseq's recipe downloads): de-en/train.tags.de-en.{de,en}
# and de-en/IWSLT14.TED{,X}.*.de-en.{de,en}.xml.
# Steps: drop the metadata lines of train.tags (the text of <title> and <description> stays, as in
# fairseq); Moses tokenization (sacremoses); clean-corpus-n -ratio 1.5, 1-175 tokens; valid = every
# 23rd pair of the cleaned training data; test = dev2010 + TEDX.dev2012 + tst2010 + tst2011 +
# tst2012 (with ’ -> '); parse the de side (cased tokens); lowercase everything (tree leaves too);
# joint BPE; fairseq-tree-preprocess. ref/test.en holds the raw test references.
#
# Environment:
#   IWSLT14_URL  the archive's URL (default http://dl.fbaipublicfiles.com/fairseq/data/iwslt14/de-en.tgz)
#   IWSLT14_DIR  a folder holding de-en.tgz, or the extracted de-en/ folder: used instead of downloading
#   and DATA, PARSER, PARSER_ARGS, BPE_MERGES, WORKERS (see data-prep/common.sh).
set -euo pipefail
source "$(dirname "$0")/common.sh"
iwslt14 de en
