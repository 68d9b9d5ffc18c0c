# The token-matched Transformer under torch.profiler with --with-stack, updates 30-70, as
# prof-stack-backward.sh profiles the other two; its data-bin rebuilt by
# train_end_to_end.token_matched_data_bin into /tmp/e2e/n-plus-m.
cd /work/main
.venv/bin/python -c "import sys; sys.path.insert(0, 'bench'); import train_end_to_end as e; from pathlib import Path; e.token_matched_data_bin(Path('/tmp/qs-run/data/bible-en-fr-sample/data-bin'), Path('/tmp/e2e/n-plus-m'), 'en', 'fr')"
cmd=$(python3 -c "import json; print(json.load(open('bench/results/train-end-to-end-token-matched-cpu.json'))['commands']['transformer_n_plus_m'])")
eval "set -- $cmd"; shift; shift
.venv/bin/python bench/profiled_train.py --from-update 30 --to-update 70 --with-stack --json /tmp/e2e/stack-backward-transformer_n_plus_m.json -- /tmp/e2e/n-plus-m "$@" --max-update 70 > /tmp/e2e/stack-backward-transformer_n_plus_m.log 2>&1
