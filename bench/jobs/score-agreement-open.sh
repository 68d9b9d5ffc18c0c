#!/usr/bin/env bash
# Issue 44's tables: every model's runs on the open-vocabulary agreement data (bench/jobs/issue44-cpu.tsv),
# from the report each run made of itself (bench/jobs/issue44-score.tsv;
# bench/results/agreement-open-runs/{bible,nyt}.MODEL.sSEED.json), roberta the baseline of the
# seed-level paired tests; bench/agreement.py checks that every report scored the same examples.
#   bash bench/jobs/score-agreement-open.sh bible OUT.json   # test, test1 (RT snippets), test2 (rule-6 verbs)
#   bash bench/jobs/score-agreement-open.sh nyt OUT.json     # test1 of the NYT editorials
set -eu
runs=bench/results/agreement-open-runs
die() { echo "score-agreement-open.sh: error: $*" >&2; exit 2; }
which=${1:-} out=${2:-}
case "$which" in
  bible) data=runs/data-agr-bpe1000 splits=(--split test --split test1 --split test2) ;;
  nyt) data=runs/data-agr-nyt1000 splits=(--split test1) ;;
  *) die "usage: score-agreement-open.sh bible|nyt OUT.json" ;;
esac
[ -n "$out" ] || die "usage: score-agreement-open.sh bible|nyt OUT.json"
args=()
for report in "$runs/$which".*.s[0-9].json; do
  [ -e "$report" ] || die "no $which runs scored yet"
  name=$(basename "$report" .json)   # WHICH.MODEL.sSEED
  rest=${name#*.}
  args+=(--results "${rest%.s*}:${rest##*.s}=$report")
done
exec .venv/bin/python bench/agreement.py --data "$data" "${splits[@]}" "${args[@]}" \
  --baseline roberta --json "$out" --markdown
