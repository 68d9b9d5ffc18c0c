"""The experiment runner: trains and evaluates one model of a config of configs/ (a reproduction
harness beside the configs it reads, not part of the ``fairseq_tree`` package).

    python configs/runner train NAME MODEL [--dry-run] [ARGS...]   # scripts/train.sh
    python configs/runner evaluate NAME MODEL [--average N] [ARGS...]   # scripts/evaluate.sh

(or ``python -m configs.runner ...`` from the repository root). ``experiment`` is the command
line, training and translation's evaluation; ``config`` reads the YAML files; ``classification``
evaluates a classification task; ``fairseq_logs`` reads fairseq's JSON logs and ``processes``
runs a command, for the runner and for bench/.
"""
