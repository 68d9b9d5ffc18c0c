#!/usr/bin/env bash
# floor and end-to-end ratio per tree source (issue 31, part 2), one after another
cd /work/main
for src in ${SOURCES:-spacy flat induced}; do
  .venv/bin/python bench/train_end_to_end.py --data /tmp/src-$src/bible-en-fr-sample/data-bin \
      --updates 160 --warmup 40 --repeats 1 --json /tmp/item2/e2e-$src${RUN:-}.json > /tmp/item2/e2e-$src${RUN:-}.log 2>&1
done
echo done
