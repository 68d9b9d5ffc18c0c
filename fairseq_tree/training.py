"""fairseq-train whose early stopping survives a resume, and which does not train a finished run
again: ``fairseq-tree-train``'s run (its command line says why and how), for bench's measured and
profiled runs too.

fairseq keeps ``--patience``'s count in memory only; here each validation's count goes to
``SAVE_DIR/patience.jsonl`` before fairseq saves the checkpoint, and a resume restores the count
of the checkpoint it resumes from. Under torchrun each process takes its place from torchrun's
environment, on the CPU too (gloo).
"""

import json
import logging
import os
import sys
from pathlib import Path

import torch
from fairseq import distributed_utils, options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq_cli import train as fairseq_train

from fairseq_tree.checkpoints import checkpoint_updates

logger = logging.getLogger("fairseq_tree.training")

RECORD = "patience.jsonl"


def resumes_own_checkpoint(checkpoint_cfg) -> Path | None:
    """``SAVE_DIR/checkpoint_last.pt`` when fairseq-train will resume this run from it with its
    optimizer and data position, else None (a new run, or one started from another model)."""
    last = Path(checkpoint_cfg.save_dir) / "checkpoint_last.pt"
    resets = (checkpoint_cfg.reset_optimizer or checkpoint_cfg.reset_dataloader
              or checkpoint_cfg.reset_lr_scheduler or checkpoint_cfg.reset_meters
              or getattr(checkpoint_cfg, "finetune_from_model", None))
    if checkpoint_cfg.restore_file != "checkpoint_last.pt" or resets or not last.is_file():
        return None
    return last


def count_at(record: Path, updates: int) -> dict | None:
    """The count after the last validation at or before ``updates``: a process stopped between
    writing a validation's count and saving its checkpoint resumes from the previous one."""
    count = None
    if record.is_file():
        with open(record, encoding="utf-8") as lines:
            for line in lines:
                entry = json.loads(line)
                if entry["num_updates"] <= updates:
                    count = entry
    return count


def restore_count(cfg, writer: bool, last: Path | None, updates: int | None) -> dict | None:
    """Set fairseq's patience count to that of the checkpoint this run resumes from (``last``,
    saved after ``updates``; None for a new run), rewriting the record without what followed it,
    or start a new record; the restored count, if any."""
    record = Path(cfg.checkpoint.save_dir) / RECORD
    count = None
    if last is not None:
        count = count_at(record, updates)
        if count is None and updates > 0:
            logger.warning(f"{last} has no patience record ({record}): early stopping counts "
                           "from this resume, as fairseq-train's does")
    if writer:
        kept = [] if count is None else \
            [line for line in record.read_text(encoding="utf-8").splitlines()
             if json.loads(line)["num_updates"] <= count["num_updates"]]
        record.parent.mkdir(parents=True, exist_ok=True)
        partial = record.with_suffix(".partial")
        partial.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
        os.replace(partial, record)  # other ranks may be reading it
    # fairseq keeps the count on whatever its module calls should_stop_early, and it would
    # outlive a run within one process
    fairseq_train.should_stop_early.best = None if count is None else count["best"]
    fairseq_train.should_stop_early.num_runs = 0 if count is None else count["num_runs"]
    return count


def recording(should_stop_early, validate_and_save, record: Path | None):
    """fairseq's ``validate_and_save`` and ``should_stop_early``, the second writing the count
    of each validation to ``record`` (None: another rank writes it) as it leaves it, which is
    before ``validate_and_save`` saves the checkpoint. fairseq's ``should_stop_early`` keeps
    its count on the function its module names so, which is then this one."""
    updates = {}

    def validate_and_save_noting_updates(cfg, trainer, task, epoch_itr, *args, **kwargs):
        updates["now"] = trainer.get_num_updates()
        return validate_and_save(cfg, trainer, task, epoch_itr, *args, **kwargs)

    def should_stop_early_recorded(cfg, valid_loss):
        stop = should_stop_early(cfg, valid_loss)
        if valid_loss is not None and record is not None:
            count = fairseq_train.should_stop_early
            entry = {"num_updates": updates["now"], "valid": valid_loss,
                     "best": count.best, "num_runs": count.num_runs}
            with open(record, "a", encoding="utf-8") as out:
                out.write(json.dumps(entry) + "\n")
                out.flush()
                os.fsync(out.fileno())
        return stop

    return should_stop_early_recorded, validate_and_save_noting_updates


def main(cfg) -> None:
    """fairseq-train's ``main`` (one per process under data-parallel training), unless the run
    it resumes has finished, with the patience count restored and recorded."""
    last = resumes_own_checkpoint(cfg.checkpoint)
    updates = None if last is None else checkpoint_updates(last)
    if updates is not None and 0 < cfg.optimization.max_update <= updates:
        logger.info(f"{last} has {updates} updates, the run's --max-update: already trained, "
                    "not resumed")
        return None
    patience = cfg.checkpoint.patience
    if patience <= 0:
        return fairseq_train.main(cfg)
    writer = distributed_utils.is_master(cfg.distributed_training)
    record = Path(cfg.checkpoint.save_dir) / RECORD if writer else None
    original = fairseq_train.should_stop_early, fairseq_train.validate_and_save
    fairseq_train.should_stop_early, fairseq_train.validate_and_save = \
        recording(*original, record)
    try:
        count = restore_count(cfg, writer, last, updates)
        if count is not None and count["num_runs"] >= patience:
            logger.info(f"{cfg.checkpoint.save_dir}: stopped early at update "
                        f"{count['num_updates']} (no better validation in {patience}): "
                        "already trained, not resumed")
            return None
        return fairseq_train.main(cfg)
    finally:
        fairseq_train.should_stop_early, fairseq_train.validate_and_save = original


TORCHRUN_ENVIRONMENT = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def join_torchrun(cfg) -> None:
    """This process's place in a torchrun launch, from torchrun's environment, when it holds
    more than one process and the command line named no ``--distributed-init-method``."""
    distributed = cfg.distributed_training
    if not all(name in os.environ for name in TORCHRUN_ENVIRONMENT) \
            or int(os.environ["WORLD_SIZE"]) < 2 or distributed.distributed_init_method:
        return
    gpus = 0 if cfg.common.cpu else torch.cuda.device_count()
    distributed.distributed_world_size = int(os.environ["WORLD_SIZE"])
    distributed.distributed_rank = int(os.environ["RANK"])
    distributed.distributed_init_method = "env://"
    distributed.distributed_no_spawn = True
    distributed.device_id = int(os.environ["LOCAL_RANK"]) % gpus if gpus else 0
    if not gpus and distributed.distributed_backend == "nccl":
        logger.info("torchrun on the CPU: --distributed-backend gloo (NCCL needs GPUs)")
        distributed.distributed_backend = "gloo"


def train_from_command_line() -> None:
    """Train as ``sys.argv`` (fairseq-train's arguments) asks, logging as fairseq-train does:
    ``main`` in every process of the run."""
    # fairseq_cli.train sets fairseq's log format as it is imported, "before importing any
    # fairseq libraries"; here fairseq_tree, and fairseq with it, came first
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
                        datefmt="%Y-%m-%d %H:%M:%S", stream=sys.stdout, force=True,
                        level=os.environ.get("LOGLEVEL", "INFO").upper())
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser)
    cfg = convert_namespace_to_omegaconf(args)
    join_torchrun(cfg)
    distributed_utils.call_main(cfg, main)
