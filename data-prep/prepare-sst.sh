#!/usr/bin/env bash
# The Stanford Sentiment Treebank (Socher et al., 2013) as the paper's Table 2 uses it: SST-5 and
# SST-2 with Tai et al.'s (2015) splits, every node and word labelled.
#
#   bash data-prep/prepare-sst.sh                  -> $DATA/sst/  (DATA=data)
#
# Data: trainDevTestTrees_PTB.zip (https://nlp.stanford.edu/sentiment/): trees/{train,dev,test}.txt,
# one tree per line whose every phrase and word carries a class 0-4 (0 very negative .. 4 very
# positive), e.g. (3 (2 It) (4 (2 's) ...)). The trees come parsed and tokenized: no parser.
#   data-bin/sst5/  8,544 / 1,101 / 2,210 sentences; label/ = the root's class
#   data-bin/sst2/  6,920 / 872 / 1,821: neutral roots dropped; label/ = 0 negative (classes 0-1),
#                   1 positive (3-4)
# Both input0/ are binarized with --node-targets: each node's and word's class (five classes in
# both) is a target, never an input (every node reads the one label NODE). Words are kept as
# they are (case kept, no BPE).
#
# Environment:
#   SST_URL   the archive's URL (default https://nlp.stanford.edu/sentiment/trainDevTestTrees_PTB.zip)
#   SST_DIR   a folder holding trainDevTestTrees_PTB.zip or its extracted trees/ folder: used
#             instead of downloading
#   and DATA, WORKERS (see data-prep/common.sh).
set -euo pipefail
source "$(dirname "$0")/common.sh"
prepare_classification --dataset sst --name sst --corpus sst \
  --local-dir "$(absolute "${SST_DIR:-}")" \
  --archive "trainDevTestTrees_PTB.zip=${SST_URL-https://nlp.stanford.edu/sentiment/trainDevTestTrees_PTB.zip}"
