#!/usr/bin/env bash
# WMT'14 English -> German: fairseq's prepare-wmt14en2de.sh data with the English side parsed.
#
#   bash data-prep/prepare-wmt14-en-de.sh          -> $DATA/wmt14-en-de/  (DATA=data)
#
# Data (fairseq's archives): europarl-v7 (training/europarl-v7.de-en.*), commoncrawl
# (commoncrawl.de-en.*), news-commentary-v12 (training/news-commentary-v12.de-en.*; v9 with
# WMT14_ICML17=1, fairseq's --icml17), test = test-full/newstest2014-deen-{src.en,ref.de}.sgm.
# Steps: Moses punctuation normalization + non-printing character removal + tokenization with
# aggressive dash splits (sacremoses) of the training text; valid = every 100th training pair;
# joint BPE learned on the training text; clean-corpus-n -ratio 1.5, 1-250 BPE pieces on train and
# valid (fairseq's order); test: ’ -> ', tokenization -a, not cleaned; no lowercasing; parse the
# English side; BPE; fairseq-tree-preprocess. ref/test.de holds the raw test references.
# A 4.5M-sentence parse takes long: it shows progress and resumes where it stopped.
#
# Environment:
#   WMT14_DIR    a folder holding the archives by their file names (training-parallel-europarl-v7.tgz,
#                training-parallel-commoncrawl.tgz, training-parallel-nc-v12.tgz (or -v9), dev.tgz,
#                test-full.tgz) or their extracted files: used instead of downloading
#   WMT14_EUROPARL_URL, WMT14_COMMONCRAWL_URL, WMT14_NEWS_COMMENTARY_URL, WMT14_DEV_URL,
#   WMT14_TEST_URL  the archives' URLs (defaults: fairseq's, statmt.org)
#   WMT14_ICML17    1: news-commentary v9 instead of v12 (fairseq's --icml17, the WMT'14 data)
#   WMT14_VALID     split (default: every 100th training pair, as fairseq) or newstest2013
#                   (dev.tgz's dev/newstest2013.{en,de}; dev.tgz is downloaded only then)
#   and DATA, PARSER, PARSER_ARGS, BPE_MERGES, WORKERS (see data-prep/common.sh).
set -euo pipefail
source "$(dirname "$0")/common.sh"
wmt14
