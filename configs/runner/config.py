"""The experiment configs (configs/NAME.yaml): reading, ``base:`` inheritance, per-model merge.

A config maps sections to settings; a model's section under ``models:`` is merged over the
file's (see configs/README.md). Flag sections (``train``, ``gpu``, ``task``, ``generate``,
``validate``) map fairseq option names without "--" to values, turned into command-line
arguments by ``flag_args``. ``kind`` is ``translation`` (tree_translation, evaluated by BLEU),
``classification`` (tree_classification, evaluated by accuracy) or ``language_model`` (fairseq's
language_modeling, trained here and evaluated by the benchmark that uses it).
"""

import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

import fairseq_tree
from fairseq_tree.checkpoint_averaging import PATTERNS
from fairseq_tree.errors import CliError

PLUGIN_DIR = Path(fairseq_tree.__file__).parent  # every fairseq command's --user-dir
BIN_DIR = Path(sys.executable).parent  # fairseq's console scripts, in this environment
# fairseq-generate / -validate with the plugin imported first (fairseq_tree.cli.fairseq_command):
# the command's own output, without what fairseq's libraries print as fairseq is imported
FAIRSEQ_COMMAND = [sys.executable, "-m", "fairseq_tree.cli.fairseq_command"]

SECTIONS = {"batch", "train", "gpu", "task", "generate", "validate", "evaluate", "paper_bleu",
            "paper_accuracy", "paper_mse"}
TOP_KEYS = SECTIONS | {"base", "kind", "pair", "data_bin", "source", "target", "recipe", "models",
                       "metric"}
KINDS = ("translation", "classification", "language_model")
FAIRSEQ_TASKS = {"translation": "tree_translation", "classification": "tree_classification",
                 "language_model": "language_modeling"}
# What a classification experiment reports from fairseq-validate: accuracy (%), or the mean
# squared error of a score (SICK-R); each with the paper's value under paper_<metric>.
METRICS = ("accuracy", "mse")


def read_yaml(path: Path) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except yaml.YAMLError as err:
        raise CliError(f"{path}: invalid YAML: {err}") from None
    if not isinstance(data, dict):
        raise CliError(f"{path}: expected a mapping at the top level")
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise CliError(f"{path}: unknown keys {unknown} (known: {sorted(TOP_KEYS)})")
    return data


def merge(base: dict, over: dict) -> dict:
    """``over`` on top of ``base``, mappings merged key by key."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            value = merge(merged[key], value)
        merged[key] = value
    return merged


def load_config(path: Path, seen=()) -> dict:
    """The config at ``path`` merged over the file its ``base:`` names (relative to it)."""
    data = read_yaml(path)
    base = data.pop("base", None)
    if base is None:
        return data
    base_path = (path.parent / base).resolve()
    if base_path in seen:
        raise CliError(f"{path}: base files form a cycle")
    return merge(load_config(base_path, (*seen, path.resolve())), data)


def known_pairs(config_dir: Path) -> list[str]:
    """Every ``PAIR.yaml`` in ``config_dir``; names starting with "_" are shared bases."""
    return sorted(p.stem for p in config_dir.glob("*.yaml") if not p.name.startswith("_"))


@dataclass
class Experiment:
    """Everything one run needs, after merging the model's section over the file's settings.
    ``name`` is the config's (checkpoints go to CHECKPOINTS/name/model), ``pair`` the recipe's
    folder under DATA and ``data_bin`` the binarized data inside it."""

    name: str
    pair: str
    model: str
    kind: str
    data_bin: str
    recipe: str
    tokens_per_update: int
    max_tokens_per_gpu: int
    train: dict
    gpu: dict
    task: dict
    average: int
    checkpoints: str
    source: str | None = None  # translation only, as the next four
    target: str | None = None
    generate: dict | None = None
    compound_split: bool = False
    paper_bleu: float | None = None
    validate: dict | None = None  # classification: fairseq-validate flags, and the next three
    metric: str = "accuracy"
    paper_accuracy: float | None = None
    paper_mse: float | None = None

    @property
    def paper_result(self) -> float | None:
        """The paper's value of the experiment's metric (BLEU for translation)."""
        if self.kind == "translation":
            return self.paper_bleu
        return getattr(self, f"paper_{self.metric}")

    def recipe_command(self, data) -> str:
        """The command that makes the experiment's data under ``data``: the config's
        ``recipe``, a script after any ``VAR=value`` settings it needs."""
        *settings, script = self.recipe.split()
        return " ".join([f"DATA={data}", *settings, "bash", script])

    @property
    def fairseq_task(self) -> str:
        return FAIRSEQ_TASKS[self.kind]


def load_experiment(config_dir: Path, pair: str, model: str) -> Experiment:
    pairs = known_pairs(config_dir)
    if pair not in pairs:
        known = ", ".join(pairs) or "none"
        raise CliError(f"unknown config {pair!r}; configs in {config_dir}: {known}")
    path = config_dir / f"{pair}.yaml"
    config = load_config(path)
    models = config.pop("models", None) or {}
    if model not in models:
        raise CliError(f"unknown model {model!r} for {pair}; {path} has: {', '.join(models)}")
    section = models[model] or {}
    unknown = sorted(set(section) - SECTIONS)
    if unknown:
        raise CliError(f"{path}: models.{model}: unknown keys {unknown} "
                       f"(known: {sorted(SECTIONS)})")
    config = merge(config, section)
    kind = (config.get("evaluate") or {}).get("checkpoints")
    if kind not in PATTERNS:
        raise CliError(f"{path}: evaluate.checkpoints is {kind!r}, not one of {sorted(PATTERNS)}")
    if config.get("kind", "translation") not in KINDS:
        raise CliError(f"{path}: kind is {config.get('kind')!r}, not one of {list(KINDS)}")
    if config.get("metric", "accuracy") not in METRICS:
        raise CliError(f"{path}: metric is {config.get('metric')!r}, not one of {list(METRICS)}")
    try:
        return build_experiment(pair, model, config)
    except KeyError as err:
        raise CliError(f"{path} (model {model}): missing setting {err}") from None


def build_experiment(name: str, model: str, config: dict) -> Experiment:
    """The merged settings of one model as an ``Experiment``; KeyError names a missing one."""
    batch, evaluate = config["batch"], config["evaluate"]
    common = dict(
        name=name, pair=config["pair"], model=model, kind=config.get("kind", "translation"),
        data_bin=config.get("data_bin", "data-bin"), recipe=config["recipe"],
        tokens_per_update=int(batch["tokens_per_update"]),
        max_tokens_per_gpu=int(batch["max_tokens_per_gpu"]), train=config["train"],
        gpu=config.get("gpu") or {}, task=config.get("task") or {},
        average=int(evaluate["average"]), checkpoints=evaluate["checkpoints"])
    if common["kind"] == "classification":
        return Experiment(**common, validate=config["validate"],
                          metric=config.get("metric", "accuracy"),
                          paper_accuracy=config.get("paper_accuracy"),
                          paper_mse=config.get("paper_mse"))
    if common["kind"] == "language_model":
        return Experiment(**common)
    return Experiment(**common, source=config["source"], target=config["target"],
                      generate=config["generate"], compound_split=bool(evaluate["compound_split"]),
                      paper_bleu=config.get("paper_bleu"))


def flag_args(flags: dict) -> list[str]:
    """``{"lr": "5e-4", "fp16": True, "x": None}`` -> ``["--lr", "5e-4", "--fp16"]``."""
    args = []
    for name, value in flags.items():
        if value is None or value is False:
            continue
        args.append(f"--{name}")
        if value is not True:
            args.append(str(value))
    return args
