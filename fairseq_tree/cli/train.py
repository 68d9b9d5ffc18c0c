"""fairseq-tree-train: fairseq-train whose early stopping survives a resume, and which does not
train a finished run again.

    fairseq-tree-train DATA --user-dir fairseq_tree --patience 3 --save-dir DIR ...

Every argument is fairseq-train's and means what it means there. fairseq keeps ``--patience``'s
count (the best validation so far and how many validations since have not beaten it) in memory
only (fairseq issue #3531): a run stopped and started again from ``checkpoint_last.pt`` counts
from zero and trains up to ``--patience`` validations more than the same run without the stop,
so its ``checkpoint_best.pt`` can differ. Here each validation's count goes to
``SAVE_DIR/patience.jsonl`` before fairseq saves the checkpoint; a resume restores the count of
the checkpoint it resumes from, so a stopped-and-resumed run stops where the uninterrupted run
stops, with the same checkpoints. Resuming a run that already stopped early trains nothing. A
fresh start (no ``checkpoint_last.pt``, another ``--restore-file``, a ``--reset-*`` option or
``--finetune-from-model``) starts a new record.

fairseq-train checks ``--max-update`` only after an update, so resuming a run whose
``checkpoint_last.pt`` already has that many updates would train one more and change the model;
here such a run is left as it is.

Under torchrun (``torchrun --nnodes N --nproc_per_node P $(which fairseq-tree-train) ...``) each
process takes its rank, the world size and its GPU (local rank modulo the GPUs there) from
torchrun's environment. fairseq-train reads that environment only when
``--distributed-world-size`` is above 1 and divides by the number of GPUs, so on the CPU it fails;
here the CPU works too, with gloo (NCCL needs GPUs). A command line over
``fairseq_tree.training``.
"""

from fairseq_tree.training import train_from_command_line


def cli_main() -> None:
    train_from_command_line()


if __name__ == "__main__":
    cli_main()
