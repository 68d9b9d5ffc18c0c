"""What fairseq's libraries print that tells a user of the plugin nothing, kept out of its commands.

fairseq 0.12 imports every task it ships, and its text-to-speech task logs "Please install
tensorboardX" as it is imported; it drives hydra through hydra 1.0's API, which hydra 1.1+
answers with six deprecation warnings each time a command builds its config; its training step
enters ``torch.cuda.amp.autocast`` the way torch 2.4 deprecated, and its attention hands torch a
boolean padding mask beside a float attention mask, which torch warns about; torch's data loader
warns that memory cannot be pinned without an accelerator. None of these is about the run, and
none can be acted on by the user. Each is matched by its own message (and category), so any
other warning, of these libraries or of ours, still shows.

The note is dropped wherever the package is imported (it is logged as fairseq is imported, before
any command of ours runs); the warnings only in the plugin's commands: ``fairseq-tree-*`` (at
import, below) and the processes that call ``ignore_library_warnings`` (the configs runner, and
the fairseq commands it runs through ``fairseq_tree.cli.fairseq_command``).
"""

import logging
import re
import warnings

TENSORBOARDX_NOTE = "Please install tensorboardX"
TENSORBOARDX_LOGGER = "fairseq.tasks.text_to_speech"

# (category, the start of the message as a regular expression)
LIBRARY_WARNINGS = (
    (UserWarning, r"hydra\.experimental\.(initialize|compose)\(\) is no longer experimental"),
    (UserWarning, r"\s*The version_base parameter is not specified"),
    (UserWarning, r"In '[^']*': Usage of deprecated keyword in package header"),
    (UserWarning, r"\s*'[^']*' is validated against ConfigStore schema with the same name"),
    (UserWarning, r"\s*The strict flag in the compose API is deprecated"),
    (FutureWarning, r"`torch\.cuda\.amp\.(autocast|GradScaler)\(args\.\.\.\)` is deprecated"),
    (UserWarning, r"Support for mismatched key_padding_mask and attn_mask is deprecated"),
    (UserWarning, r"'pin_memory' argument is set as true but no accelerator is found"),
)


class DropMessage(logging.Filter):
    """Drops the records whose message starts with ``start``."""

    def __init__(self, start: str):
        super().__init__()
        self.start = start

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.start)


def drop_tensorboardx_note():
    """fairseq's text-to-speech task's note, on its own logger only (fairseq's
    ``--tensorboard-logdir`` says what it needs itself)."""
    logger = logging.getLogger(TENSORBOARDX_LOGGER)
    if not any(isinstance(f, DropMessage) for f in logger.filters):
        logger.addFilter(DropMessage(TENSORBOARDX_NOTE))


def ignore_library_warnings():
    """The warnings of ``LIBRARY_WARNINGS`` ignored in this process; every other still shows."""
    for category, message in LIBRARY_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category)


def is_plugin_command(argv0: str) -> bool:
    """Whether the running program is one of the plugin's console scripts (``fairseq-tree-*``)."""
    return re.match(r"fairseq-tree-", argv0.rsplit("/", 1)[-1]) is not None
