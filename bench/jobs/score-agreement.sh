#!/usr/bin/env bash
# Issue 29's link-grammar or flat runs scored by attractors (bench/agreement.py, the test split),
# from the report each run made of itself (bench/jobs/agreement-lg-flat-cpu.tsv;
# bench/results/agreement-lg-flat-runs/SOURCE.MODEL.sSEED.test.json), and roberta, the baseline of
# the paired tests, from the spaCy report (bench/results/agreement-spacy-test.json): roberta reads
# the leaves alone, the same in every source's folder; the examples are checked to be the same.
#   bash bench/jobs/score-agreement.sh SOURCE OUT.json        (SOURCE: lg or flat)
# Does the tree source matter? One model on every source, its spaCy-tree runs the baseline:
#   bash bench/jobs/score-agreement.sh sources MODEL OUT.json
# (spaCy trees alone: agreement-spacy-test.json, scored from the checkpoints with --data-of.)
# Issue 44's open-vocabulary runs (bench/jobs/agreement-open-score.tsv's reports,
# bench/results/agreement-open-runs/{bible,nyt}.MODEL.sSEED.json), roberta's among them:
#   bash bench/jobs/score-agreement.sh open bible OUT.json  # test, test1 (RT snippets), test2 (rule-6 verbs)
#   bash bench/jobs/score-agreement.sh open nyt OUT.json    # test1 of the NYT editorials
# Informal text's case (bench/jobs/agreement-case-cpu.tsv's reports,
# bench/results/agreement-case-runs/lowercase.MODEL.sSEED.json), and the choice of CASE on valid
# (bench/jobs/agreement-case-choice.tsv's seed-1 runs of RTA, choice.CASE.rta.s1.json):
#   bash bench/jobs/score-agreement.sh case OUT.json         # valid, test, test1-test5
#   bash bench/jobs/score-agreement.sh case-choice OUT.json  # valid and valid lowercased (test4)
# With made coordinations (bench/jobs/agreement-coordination-cpu.tsv's reports,
# coordination-WHICH.rta.sSEED.json; WHICH: main, every, or main-quarter (a quarter of main's,
# COORDINATION_FRACTION=0.25), the recipe's folder runs/data-agr-coordination-WHICH; the baseline
# roberta's runs on CASE=lowercase alone), and what
# they change, model by model, against the same seeds on CASE=lowercase alone (every evaluated
# split holds the same examples in both folders):
#   bash bench/jobs/score-agreement.sh coordination WHICH OUT.json   # valid, test, test1-test5
#   bash bench/jobs/score-agreement.sh coordination-effect WHICH MODEL OUT.json  # rta, roberta
# Any other recipe of the same examples the same way, by its name NAME (runs/data-agr-NAME,
# NAME.MODEL.sSEED.json: past-tense, bench/jobs/agreement-past-tense-cpu.tsv's; every model's
# but roberta, whose baseline runs are CASE=lowercase's):
#   bash bench/jobs/score-agreement.sh recipe NAME OUT.json
#   bash bench/jobs/score-agreement.sh recipe-effect NAME MODEL OUT.json
# (against another recipe's runs of the same examples instead of CASE=lowercase's: BASELINE=NAME)
# Where the recipes' runs go wrong, by the number of the present-tense verb nearest before the
# verb (--by-nearest-verb; valid and test): the CASE=lowercase runs, the baseline, against each
# recipe NAME's, scored again from their checkpoints (runs/agr-case/NAME.MODEL/seed-N/), or where
# those are gone from the rows the report STORED (default the committed one) holds of them:
#   bash bench/jobs/score-agreement.sh nearest-verb MODEL OUT.json NAME...
set -eu
runs=bench/results/agreement-lg-flat-runs spacy=bench/results/agreement-spacy-test.json
declare -A data=([lg]=runs/data-agr-lg [flat]=runs/data-agr-flat)
die() { echo "score-agreement.sh: error: $*" >&2; exit 2; }
args=() splits=(--split test)
# --results of each run's report REPORT, named MODEL:SEED from its name PREFIX.MODEL.sSEED.SUFFIX
add_reports() {
  local report name rest
  for report in "$@"; do
    [ -e "$report" ] || die "no runs scored yet: $report"
    name=$(basename "$report"); name=${name%.test.json}; name=${name%.json}
    rest=${name#*.}
    args+=(--results "${rest%.s*}:${rest##*.s}=$report")
  done
}
if [ "${1:-}" = open ]; then
  which=${2:-} out=${3:-}
  case "$which" in
    bible) folder=runs/data-agr-bpe1000 splits=(--split test --split test1 --split test2) ;;
    nyt) folder=runs/data-agr-nyt1000 splits=(--split test1) ;;
    *) die "usage: score-agreement.sh open bible|nyt OUT.json" ;;
  esac
  [ -n "$out" ] || die "usage: score-agreement.sh open bible|nyt OUT.json"
  add_reports bench/results/agreement-open-runs/"$which".*.s[0-9].json
  args+=(--baseline roberta)
elif [ "${1:-}" = case ] || [ "${1:-}" = coordination ] || [ "${1:-}" = recipe ]; then
  recipe=lowercase out=${2:-}
  if [ "$1" != case ]; then
    prefix= what=NAME; [ "$1" = coordination ] && prefix=coordination- what=WHICH
    [ -n "${2:-}" ] && [ -d "runs/data-agr-$prefix$2" ] || die "usage: score-agreement.sh $1 $what OUT.json (runs/data-agr-$prefix$what: the recipe's folder)"
    recipe=$prefix$2 out=${3:-}
  fi
  folder=runs/data-agr-$recipe
  [ -n "$out" ] || die "usage: score-agreement.sh case OUT.json, coordination WHICH OUT.json or recipe NAME OUT.json"
  splits=(--split valid --split test --split test1 --split test2 --split test3 --split test4
          --split test5)
  if [ "$recipe" = lowercase ]; then
    add_reports bench/results/agreement-case-runs/lowercase.*.s[0-9].json
  else  # the tree models' runs, roberta's of CASE=lowercase alone (the same test examples)
    for report in bench/results/agreement-case-runs/"$recipe".*.s[0-9].json; do
      case $report in *.roberta.s[0-9].json) ;; *) add_reports "$report" ;; esac
    done
    for seed in 1 2 3; do
      args+=(--results "roberta:$seed=bench/results/agreement-case-runs/lowercase.roberta.s$seed.json")
    done
  fi
  args+=(--baseline roberta)
elif [ "${1:-}" = coordination-effect ] || [ "${1:-}" = recipe-effect ]; then
  [ $# -eq 4 ] || die "usage: score-agreement.sh coordination-effect WHICH MODEL OUT.json, or recipe-effect NAME MODEL OUT.json"
  prefix=; [ "$1" = coordination-effect ] && prefix=coordination-
  which=$2 model=$3 out=$4 folder=runs/data-agr-lowercase base=${BASELINE:-lowercase}
  [ -d "$folder" ] || folder=runs/data-agr-$prefix$which  # its evaluated splits are the same
  splits=(--split valid --split test --split test1 --split test2 --split test5)
  for recipe in "$base" "$prefix$which"; do
    for seed in 1 2 3; do
      report=bench/results/agreement-case-runs/$recipe.$model.s$seed.json
      [ -e "$report" ] || { echo "score-agreement.sh: note: not scored yet: $report" >&2; continue; }
      args+=(--results "$model@$recipe:$seed=$report#$model:$seed")
    done
  done
  args+=(--baseline "$model@$base")
elif [ "${1:-}" = nearest-verb ]; then
  [ $# -ge 4 ] || die "usage: score-agreement.sh nearest-verb MODEL OUT.json NAME..."
  model=$2 out=$3 folder=; shift 3
  splits=(--split valid --split test --by-nearest-verb)
  long=$model; [ "$model" = rta ] && long=recursive_tree_attention_classifier
  # a recipe whose checkpoints are gone keeps the rows an earlier scoring stored (STORED)
  stored=$(mktemp); trap 'rm -f "$stored"' EXIT  # OUT may be the stored report itself
  cp "${STORED:-bench/results/agreement-nearest-verb.json}" "$stored" 2>/dev/null || echo '{}' >"$stored"
  for recipe in lowercase "$@"; do
    name=$model@$recipe
    if [ -d "runs/data-agr-$recipe" ] && [ -e "runs/agr-case/$recipe.$long/seed-1" ]; then
      folder=${folder:-runs/data-agr-$recipe}
      args+=(--data-of "$name=runs/data-agr-$recipe")
      for seed in 1 2 3; do
        args+=(--checkpoint "$name:$seed=runs/agr-case/$recipe.$long/seed-$seed/agreement/$long/checkpoint_best.pt")
      done
    elif grep -q "\"$name:1\"" "$stored"; then
      echo "score-agreement.sh: note: $name's rows as ${STORED:-bench/results/agreement-nearest-verb.json} stored them" >&2
      for seed in 1 2 3; do args+=(--results "$name:$seed=$stored"); done
    else
      die "$name: neither checkpoints (runs/agr-case/$recipe.$long/) nor stored rows"
    fi
  done
  [ -n "$folder" ] || die "no recipe folder with checkpoints among: lowercase $*"
  args+=(--baseline "$model@lowercase")
elif [ "${1:-}" = case-choice ]; then
  out=${2:-} folder=runs/data-agr-cased  # every CASE's valid and test4 hold the same examples
  [ -n "$out" ] || die "usage: score-agreement.sh case-choice OUT.json"
  splits=(--split valid --split test4)
  for case in cased lowercase augment; do
    report=bench/results/agreement-case-runs/choice.$case.rta.s1.json
    [ -e "$report" ] || die "no runs scored yet: $report"
    args+=(--results "rta@$case:1=$report#rta:1")
  done
  args+=(--baseline rta@cased)
elif [ "${1:-}" = sources ]; then
  [ $# -eq 3 ] || die "usage: score-agreement.sh sources MODEL OUT.json"
  model=$2 out=$3 folder=runs/data-agr
  for seed in 1 2 3; do
    args+=(--results "$model@spacy:$seed=$spacy#$model:$seed")
  done
  for source in lg flat; do
    for report in "$runs/$source.$model".s[0-9].test.json; do
      [ -e "$report" ] || { echo "score-agreement.sh: note: no $source runs of $model scored yet" >&2; continue; }
      seed=$(basename "$report" .test.json); seed=${seed##*.s}
      args+=(--results "$model@$source:$seed=$report#$model:$seed")
    done
  done
  args+=(--baseline "$model@spacy")
else
  source=${1:-} out=${2:-}
  [ -n "${data[$source]:-}" ] && [ -n "$out" ] || die "usage: score-agreement.sh lg|flat OUT.json"
  folder=${data[$source]}
  add_reports "$runs/$source".*.s[0-9].test.json
  for seed in 1 2 3; do
    args+=(--results "roberta:$seed=$spacy")
  done
  args+=(--baseline roberta)
fi
.venv/bin/python -m bench.agreement --data "$folder" "${splits[@]}" "${args[@]}" --json "$out" \
  --markdown
