# Copy what bench/jobs/parser-trees-gpu.tsv reads into devdata/ (ignored through .git/info/exclude),
# the folder the device tool carries: each pair's data-bin, recipe.json and test references.
set -euo pipefail
src=${DATA:-runs/data} rt=${RT_DATA:-runs/data-rt-spacy}
rm -rf devdata/data devdata/rt-spacy
for pair in bible-fr-en bible-fr-en-spacy bible-en-fr-spacy; do
  mkdir -p devdata/data/$pair/tok
  cp -r "$src/$pair/data-bin" "$src/$pair/ref" "$src/$pair/recipe.json" devdata/data/$pair/
  cp "$src/$pair"/tok/test.* devdata/data/$pair/tok/
done
mkdir -p devdata/rt-spacy/rt-snippets
cp -r "$rt/rt-snippets/data-bin" devdata/rt-spacy/rt-snippets/
du -sh devdata
