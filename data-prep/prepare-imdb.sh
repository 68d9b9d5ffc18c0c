#!/usr/bin/env bash
# IMDB movie reviews (Maas et al., 2011) as the paper's Table 2 uses them: a review is one
# example, its sentences' trees under one DOC root (the paper's "dummy root").
#
#   bash data-prep/prepare-imdb.sh                 -> $DATA/imdb/  (DATA=data)
#
# Data: aclImdb_v1.tar.gz (https://ai.stanford.edu/~amaas/data/sentiment/): aclImdb/{train,test}/
# {neg,pos}/ID_RATING.txt, 12,500 reviews in each folder (train/unsup is not used).
# Splits: test = the 25,000 test reviews; valid = IMDB_VALID_SIZE (2,500) training reviews drawn
# with seed IMDB_SEED (1); train = the other 22,500 (the paper trained on 25,000 and does not say
# how it validated). Labels: 0 negative, 1 positive.
# Steps: <br /> ends a paragraph; paragraphs are split into sentences (pysbd); Moses punctuation
# normalisation and tokenisation (case kept); a review keeps its first whole sentences within
# IMDB_MAX_WORDS (500) words (a batch of the paper's 2,048 tokens holds a tree of about 1,000
# leaves at most; recipe.json counts the reviews cut); each sentence parsed; joint BPE on the
# leaves (BPE_MERGES, default 8000: the authors' IMDB script used 8k subwords); binarize.
#
# Environment:
#   IMDB_URL   the archive's URL (default https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz)
#   IMDB_DIR   a folder holding aclImdb_v1.tar.gz or its extracted aclImdb/ folder: used instead
#              of downloading
#   IMDB_VALID_SIZE, IMDB_SEED, IMDB_MAX_WORDS  see above
#   and DATA, PARSER (stanza), PARSER_ARGS, BPE_MERGES, WORKERS (see data-prep/common.sh).
set -euo pipefail
export BPE_MERGES=${BPE_MERGES:-8000}
source "$(dirname "$0")/common.sh"
prepare_classification --dataset imdb --name imdb --corpus imdb \
  --local-dir "$(absolute "${IMDB_DIR:-}")" \
  --archive "aclImdb_v1.tar.gz=${IMDB_URL-https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz}" \
  --valid-size "${IMDB_VALID_SIZE:-2500}" --seed "${IMDB_SEED:-1}" \
  --max-words "${IMDB_MAX_WORDS:-500}"
