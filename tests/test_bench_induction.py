"""Smoke runs of the Tree Transformer benchmarks at toy sizes: bench/induction.py (induced-tree F1
and masked-word perplexity) and bench/induced_translation.py (the French induced-tree recipe on a
stand-in Bible, then tree2seq on induced trees vs flat trees vs the Transformer); each run once,
then resumed from its JSON."""

import json
import math
import re
import sys

import pytest
import torch
from conftest import PLUGIN_DIR, write_lines

from fairseq_tree.trees import parse_tree

from bench.lib import compare
from bench import induced_translation
from bench import induction
from bench.lib import masked_lm
import standins

TINY_LM = ["--encoder-layers", "4", "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64"]


def refuse(*args, **kwargs):
    raise AssertionError("a finished run was made again")


def with_option(argv: list[str], *option: str) -> list[str]:
    """``argv`` with ``option`` before its ``--`` (the last value of an option wins)."""
    return [*argv[:argv.index("--")], *option, *argv[argv.index("--"):]]


@pytest.fixture(scope="module")
def induction_run(tmp_path_factory):
    """The toy induction benchmark, run once for the tests of this module: its folder, its
    arguments and its report."""
    tmp = tmp_path_factory.mktemp("induction")
    argv = ["--synthetic-train", "200", "--valid", "20", "--test", "20", "--bible-train", "300",
            "--bpe-merges", "200", "--max-update", "3", "--seeds", "1", "--work",
            str(tmp / "work"), "--json", str(tmp / "r.json"), "--", *TINY_LM]
    return tmp, argv, induction.main(argv)


@pytest.mark.slow
def test_induction_benchmark_scores_trees_and_perplexity(induction_run):
    tmp_path, _, report = induction_run
    assert json.loads((tmp_path / "r.json").read_text())["results"] == report["results"]
    rows = report["results"]
    assert [(r["corpus"], r["arch"]) for r in rows] == [
        ("synthetic", "constituent_transformer_tiny"), ("bible", "constituent_transformer_tiny"),
        ("bible", "plain_transformer_mlm_tiny")]
    for row in rows:
        assert row["updates"] == 3
    for row in rows[:2]:
        parsing = row["parsing"]
        assert parsing["sentences"] == 20 and 0 <= parsing["pred_scores"]["sentence_f1"] <= 100
        assert parsing["right_branching"]["sentence_f1"] > parsing["left_branching"]["sentence_f1"]
    gold = (tmp_path / "work" / "data" / "bible" / "test.gold").read_text().splitlines()
    assert len(gold) == 20 and not any(tree.startswith("(ROOT ") for tree in gold)
    constituent, plain = rows[1:]
    assert constituent["masked_words"]["masked_words"] == plain["masked_words"]["masked_words"] > 0
    assert constituent["parameters"] - plain["parameters"] == 4 * (2 * (32 * 32 + 32) + 2 * 32)
    assert all(r["masked_words"]["perplexity"] > 1 for r in rows[1:])


@pytest.mark.slow
def test_induction_benchmark_resumes_from_its_json(induction_run, tmp_path, monkeypatch, capsys):
    """The runs in --json are not made again, nor their corpus prepared; each new run is in the
    JSON as soon as it is done; the summary is of old and new runs."""
    _, argv, report = induction_run
    with monkeypatch.context() as patch:
        patch.setattr(masked_lm, "train", refuse)
        patch.setattr(masked_lm, "make_lm_data", refuse)
        assert induction.main(argv)["results"] == report["results"]
    printed = capsys.readouterr().out
    assert "right-branching" in printed and "plain_transformer_mlm_tiny" in printed

    # a session that ended after the synthetic corpus (the work folder is kept: no training)
    path = tmp_path / "r.json"
    path.write_text(json.dumps({**report, "results": report["results"][:1]}))
    trained, prepared = [], []
    train, make_lm_data = masked_lm.train, masked_lm.make_lm_data

    def counted_train(data_bin, arch, *rest):
        trained.append((arch, len(json.loads(path.read_text())["results"])))
        return train(data_bin, arch, *rest)

    def counted_lm_data(texts, work, merges):
        prepared.append(work.name)
        return make_lm_data(texts, work, merges)

    def timeless(rows):  # (the seconds of a call differ)
        return [{k: v for k, v in row.items() if k != "this_call_seconds"} for row in rows]

    monkeypatch.setattr(masked_lm, "train", counted_train)
    monkeypatch.setattr(masked_lm, "make_lm_data", counted_lm_data)
    rows = induction.main(with_option(argv, "--json", str(path)))["results"]
    assert prepared == ["bible"]
    assert trained == [(induction.CONSTITUENT, 1), (induction.PLAIN, 2)]
    assert timeless(rows) == timeless(report["results"])


def assert_refuses_other_settings(main, argv, option, json_path, monkeypatch):
    """A run with ``option`` changed stops with one line naming the JSON and the setting, and
    neither trains nor touches the JSON."""
    before = json_path.read_text()
    monkeypatch.setattr(masked_lm, "train", refuse)
    with pytest.raises(SystemExit) as refused:
        main(with_option(argv, option, "4"))
    message = str(refused.value)
    assert str(json_path) in message and option[2:].replace("-", "_") in message
    assert "\n" not in message and json_path.read_text() == before


@pytest.mark.slow
def test_induction_benchmark_refuses_a_json_of_other_settings(induction_run, monkeypatch):
    tmp_path, argv, _ = induction_run
    assert_refuses_other_settings(induction.main, argv, "--max-update", tmp_path / "r.json",
                                  monkeypatch)


def tiny_checkpoint(tmp_path, arch: str):
    """A masked LM of ``arch`` (2 layers, d 16) saved as fairseq-train saves a checkpoint, its
    weights drawn (seeded) larger than BERT's initialisation so that its predictions are far from
    uniform; with its dictionary (8 words) in ``tmp_path / "bin"``. Returns the path and the
    model (in eval mode)."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from omegaconf import OmegaConf

    (tmp_path / "bin").mkdir()
    write_lines(tmp_path / "bin" / "dict.txt", [f"w{i} {10 - i}" for i in range(8)])
    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(tmp_path / "bin"), "--user-dir", str(PLUGIN_DIR), "--task", "masked_lm",
        "--criterion", "masked_lm", "--arch", arch, "--encoder-layers", "2",
        "--encoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32",
        "--encoder-attention-heads", "2", "--tokens-per-sample", "16"])
    cfg = convert_namespace_to_omegaconf(args)
    torch.manual_seed(0)
    model = tasks.setup_task(cfg.task).build_model(cfg.model).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_(0.0, 0.5)
    state = {"args": None, "cfg": OmegaConf.to_container(cfg, resolve=True, enum_to_str=True),
             "model": model.state_dict(), "optimizer_history": [
                 {"criterion_name": "MaskedLmLoss", "optimizer_name": "FairseqAdam",
                  "lr_scheduler_state": {}, "num_updates": 0}],
             "extra_state": {"train_iterator": {"epoch": 1}}, "last_optimizer_state": None}
    torch.save(state, tmp_path / "checkpoint.pt")
    return tmp_path / "checkpoint.pt", model


@pytest.mark.parametrize("arch", ["constituent_transformer_tiny", "plain_transformer_mlm_tiny"])
def test_masked_word_perplexity_equals_a_hand_computation(tmp_path, arch):
    """masked_lm.masked_word_perplexity against Table 4's protocol done by hand on a tiny
    model: every word (not <unk>) of every sentence masked alone in <s> units </s>, the model
    run on that one sentence, log-softmax of its logits at the masked position written out,
    perplexity = exp(mean NLL). Batches of 3 samples of different lengths (padding)."""
    checkpoint, model = tiny_checkpoint(tmp_path, arch)
    units = write_lines(tmp_path / "test.txt", ["w1 w2 w3", "w4 zebra w5 w0", "w7", "w2 w6"])
    vocab = model.encoder.dictionary
    mask = vocab.index("<mask>")
    assert mask == len(vocab) - 1 and vocab.index("zebra") == vocab.unk()
    losses = []
    for line in units.read_text().splitlines():
        ids = [vocab.bos(), *(vocab.index(unit) for unit in line.split()), vocab.eos()]
        for position in range(1, len(ids) - 1):
            if ids[position] == vocab.unk():
                continue  # not scored
            masked = list(ids)
            masked[position] = mask
            with torch.no_grad():
                logits, _ = model(torch.tensor([masked]))  # 1 x T x V, every position
            scores = logits[0, position].double().tolist()
            top = max(scores)
            log_z = top + math.log(sum(math.exp(score - top) for score in scores))
            losses.append(log_z - scores[ids[position]])  # -log p(word)
    assert len(losses) == 3 + 3 + 1 + 2
    expected = math.exp(sum(losses) / len(losses))
    # The predictions are not uniform: a wrong target or position would change the result.
    assert max(losses) - min(losses) > 1.0 and abs(math.log(expected / len(vocab))) > 0.3
    for batch_size in (3, 256):
        result = masked_lm.masked_word_perplexity(checkpoint, units, batch_size=batch_size)
        assert result["masked_words"] == len(losses)
        assert result["perplexity"] == pytest.approx(expected, rel=1e-5)


@pytest.fixture(scope="module")
def translation_run(tmp_path_factory):
    """The toy induced-translation benchmark (French -> English on a stand-in Bible, the
    induced-tree model alone), run once for the tests of this module: its folder, its arguments
    and its report."""
    tmp = tmp_path_factory.mktemp("translation")
    standin = standins.bible(tmp / "standin")
    argv = ["--directions", "fr-en", "--seeds", "1", "--base-models", "--lm-max-update", "3",
            "--bpe-merges", "100", *(f"--lm-arg={arg}" for arg in TINY_LM), "--data",
            str(tmp / "data"), "--work", str(tmp / "work"), "--generate-arg=--max-len-b=4",
            "--json", str(tmp / "r.json"), "--", "--max-update", "2"]
    with pytest.MonkeyPatch.context() as patch:
        for key, value in {"BIBLE_DIR": str(standin["wheel"].parent),
                           "BIBLE_SOURCE_TOKENS": "1:25", "BPE_MERGES": "300", "WORKERS": "1",
                           "FAIRSEQ_TREE_VENV": sys.prefix, "PYTHONWARNINGS": "ignore"}.items():
            patch.setenv(key, value)
        return tmp, argv, induced_translation.main(argv)


@pytest.mark.slow
def test_french_induced_tree_recipe_and_translation(translation_run):
    tmp_path, _, report = translation_run
    data, work = tmp_path / "data", tmp_path / "work"
    rows = report["results"]
    # (compare.py on the flat-tree pair is the same call, tested by the other benchmarks)
    assert [(r["pair"], r["model"]) for r in rows] == [("bible-fr-en-induced", "tree2seq")]
    assert all(r["updates"] == 2 and r["test_sentences"] == 7 for r in rows)
    flat = data / "bible-fr-en"
    induced = work / "fr-en" / "seed1" / "data" / "bible-fr-en-induced"
    assert json.loads((induced / "recipe.json").read_text())["parser"] == "induced"
    for split in ("train", "valid", "test"):
        tokens = (flat / "tok" / f"{split}.fr").read_text().splitlines()
        assert (induced / "tok" / f"{split}.fr").read_text().splitlines() == tokens
        assert (induced / "tok" / f"{split}.en").read_text() == (
            flat / "tok" / f"{split}.en").read_text()
        trees = (induced / "trees" / f"{split}.fr").read_text().splitlines()
        assert [parse_tree(tree).leaves for tree in trees] == [t.split() for t in tokens]
        assert all(set(re.findall(r"\((\S+)", tree)) == {"X"} for tree in trees)
        flat_trees = (flat / "trees" / f"{split}.fr").read_text().splitlines()
        assert all(tree.startswith("(ROOT ") for tree in flat_trees)


@pytest.mark.slow
def test_induced_translation_resumes_from_its_json(translation_run, tmp_path, monkeypatch,
                                                   capsys):
    """The runs in --json are not made again; more base-pair models later need neither a masked
    LM nor induced trees, and each is in the JSON as soon as it is done."""
    _, argv, report = translation_run
    for module, name in ((compare, "run_model"), (masked_lm, "train"),
                         (masked_lm, "make_lm_data"), (induced_translation, "recipe")):
        monkeypatch.setattr(module, name, refuse)
    assert induced_translation.main(argv)["results"] == report["results"]
    assert "induced (`constituent_transformer_tiny`)" in capsys.readouterr().out

    path, ran = tmp_path / "r.json", []
    path.write_text(json.dumps(report))
    scores = {k: v for k, v in report["results"][0].items()
              if k not in ("direction", "pair", "seed")}

    def run_model(pair, model, *rest):  # (its training and scoring are tested above)
        ran.append((pair, model, len(json.loads(path.read_text())["results"])))
        return {**scores, "model": model}

    monkeypatch.setattr(compare, "run_model", run_model)
    rows = induced_translation.main(with_option(
        argv, "--json", str(path), "--base-models", "transformer", "tree2seq"))["results"]
    assert ran == [("bible-fr-en", "transformer", 1), ("bible-fr-en", "tree2seq", 2)]
    assert rows[0] == report["results"][0] and [(r["pair"], r["model"]) for r in rows] == [
        ("bible-fr-en-induced", "tree2seq"), ("bible-fr-en", "transformer"),
        ("bible-fr-en", "tree2seq")]


@pytest.mark.slow
def test_no_induced_runs_the_base_pair_models_only(translation_run, tmp_path, monkeypatch):
    """``--no-induced`` (the base pair's models, beside an induced-tree call on the other core)
    neither trains a masked LM nor induces trees."""
    _, argv, report = translation_run
    for module, name in ((masked_lm, "train"), (masked_lm, "make_lm_data"),
                         (induced_translation, "recipe")):
        monkeypatch.setattr(module, name, refuse)
    ran = []
    scores = {k: v for k, v in report["results"][0].items()
              if k not in ("direction", "pair", "seed", "model")}
    monkeypatch.setattr(compare, "run_model",
                        lambda pair, model, *rest: ran.append((pair, model)) or
                        {**scores, "model": model})
    rows = induced_translation.main(with_option(
        argv, "--json", str(tmp_path / "base.json"), "--no-induced", "--base-models",
        "tree2seq", "transformer"))["results"]
    assert ran == [("bible-fr-en", "tree2seq"), ("bible-fr-en", "transformer")]
    assert [(r["pair"], r["model"]) for r in rows] == ran


@pytest.mark.slow
def test_induced_translation_refuses_a_json_of_other_settings(translation_run, monkeypatch):
    tmp_path, argv, _ = translation_run
    assert_refuses_other_settings(induced_translation.main, argv, "--lm-max-update",
                                  tmp_path / "r.json", monkeypatch)


def test_induced_translation_tests_its_kept_translations(tmp_path, monkeypatch):
    """A call with every run in --json trains nothing and writes, from the kept translations,
    sacrebleu's paired bootstrap of each system against the induced-tree tree2seq of the same
    seed (a row merged from bench/lib/seeds.py read from that JSON's --keep), the seed-level t-tests
    of bench/lib/report.py, and the nodes per word of the source trees it finds."""
    from bench.lib import report
    import sacrebleu

    for module, name in ((compare, "run_model"), (masked_lm, "train"),
                         (masked_lm, "make_lm_data"), (induced_translation, "recipe")):
        monkeypatch.setattr(module, name, refuse)
    reference = [f"the {w} of verse {i} is here and there again" for i, w in
                 enumerate(["word", "light", "day", "night", "water", "earth"] * 4)]
    data, keep, seed_keep = tmp_path / "data", tmp_path / "kept", tmp_path / "seed-kept"
    for pair, tgt, parser in (("bible-fr-en", "en", "flat"), ("bible-en-fr", "fr", "link-grammar")):
        (data / pair / "ref").mkdir(parents=True)
        (data / pair / "ref" / f"test.{tgt}").write_text("\n".join(reference) + "\n")
        (data / pair / "recipe.json").write_text(json.dumps({"lowercase": False,
                                                             "parser": parser}))
    (data / "bible-fr-en" / "trees").mkdir()
    (data / "bible-fr-en" / "trees" / "train.fr").write_text("(ROOT a b c)\n(ROOT d e)\n"
                                                             "(S (NP f g) (VP h))\n")
    seeds_json = tmp_path / "seeds.json"
    seeds_json.write_text(json.dumps({"command": f"bench/lib/seeds.py x --keep {seed_keep}"}))

    def translation(dropped: int) -> list[str]:  # every line loses its last `dropped` words
        return [" ".join(line.split()[:-dropped] if dropped else line.split())
                for line in reference]

    rows, files = [], {}
    systems = [("fr-en", "bible-fr-en-induced", "tree2seq", keep, "fr-en.tree2seq-induced", {}),
               ("fr-en", "bible-fr-en", "tree2seq", keep, "fr-en.tree2seq-flat", {}),
               ("fr-en", "bible-fr-en", "transformer", keep, "fr-en.transformer", {}),
               ("en-fr", "bible-en-fr-induced", "tree2seq", keep, "en-fr.tree2seq-induced", {}),
               ("en-fr", "bible-en-fr", "tree2seq", seed_keep, "tree2seq",
                {"from": str(seeds_json)}),
               ("en-fr", "bible-en-fr", "transformer", seed_keep, "transformer",
                {"from": str(seeds_json)})]
    for seed in (1, 2):
        for index, (direction, pair, model, folder, name, extra) in enumerate(systems):
            text = translation((index + seed) % 4)
            path = folder / f"{name}.seed-{seed}.{direction[-2:]}"
            path.parent.mkdir(exist_ok=True)
            path.write_text("\n".join(text) + "\n")
            files[direction, pair, model, seed] = text
            rows.append({"direction": direction, "pair": pair, "model": model, "seed": seed,
                         "sacrebleu": sacrebleu.corpus_bleu(text, [reference]).score, **extra})
    settings = {"lm_max_update": 1500, "lm_arg": [], "bpe_merges": 4000, "generate_arg": [],
                "extra": []}
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"settings": settings, "commands": ["an earlier call"],
                                "note": "merged", "results": rows}))
    argv = ["--seeds", "1", "2", "--data", str(data), "--work", str(tmp_path / "work"),
            "--json", str(path), "--keep", str(keep), "--resamples", "50"]
    made = induced_translation.main(argv)
    assert json.loads(path.read_text()) == made
    assert made["results"] == rows and made["note"] == "merged"
    assert made["commands"] == ["an earlier call", "bench/induced_translation.py " + " ".join(argv)]
    assert [(p["direction"], p["seed"], p["first"], p["other"])
            for p in made["paired_bootstrap"]] == [
        ("fr-en", 1, "tree2seq-induced", "tree2seq-flat"),
        ("fr-en", 1, "tree2seq-induced", "transformer"),
        ("en-fr", 1, "tree2seq-induced", "tree2seq-link-grammar"),
        ("en-fr", 1, "tree2seq-induced", "transformer"),
        ("fr-en", 2, "tree2seq-induced", "tree2seq-flat"),
        ("fr-en", 2, "tree2seq-induced", "transformer"),
        ("en-fr", 2, "tree2seq-induced", "tree2seq-link-grammar"),
        ("en-fr", 2, "tree2seq-induced", "transformer")]
    by_system = {(r["direction"], induced_translation.system_name(r), r["seed"]): r["sacrebleu"]
                 for r in rows}
    for pair in made["paired_bootstrap"]:
        assert 0 < pair["p_value"] <= 1
        for which in ("first", "other"):
            score = by_system[pair["direction"], pair[which], pair["seed"]]
            assert pair[f"{which}_bleu"] == pytest.approx(score, abs=1e-3)
    assert made["paired_bootstrap"][2]["command"].count(str(seed_keep)) == 1
    assert [(t["direction"], t["system"]) for t in made["seed_t_tests"]] == [
        ("fr-en", "bible-fr-en tree2seq"), ("fr-en", "bible-fr-en transformer"),
        ("en-fr", "bible-en-fr tree2seq"), ("en-fr", "bible-en-fr transformer")]
    for test in made["seed_t_tests"]:
        pair, model = test["system"].split()
        expected = report.paired_t_test(
            *([r["sacrebleu"] for r in rows if (r["pair"], r["model"]) == system]
              for system in ((f"{pair}-induced", "tree2seq"), (pair, model))))
        assert test["p_value"] == pytest.approx(expected["p_value"])
    assert [(t["direction"], t["trees"], t["seed"], t["split"], t["leaves_are"],
             t["sentences"], t["leaves"], t["internal_nodes"], t["nodes_per_leaf"],
             t["flat_trees"]) for t in made["source_trees"]] == [
        ("fr-en", "flat", None, "train", "words", 3, 8, 4, 0.5, 2)]
    # a call on one direction, the other's data gone, keeps what the first call found
    (data / "bible-en-fr" / "recipe.json").unlink()
    again = induced_translation.main(["--directions", "fr-en", *argv])
    def key(test):
        return test["direction"], test["seed"], test["other"]

    assert sorted(again["paired_bootstrap"], key=key) == sorted(made["paired_bootstrap"], key=key)
    assert again["seed_t_tests"] == made["seed_t_tests"]
