"""The examples run (``--quick`` in the fast tests, full runs marked slow) and keep their
promises: accuracy on the digits, loss below the unigram entropy, the wrong rule detectable."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import tpx as tp
from tests.helpers.load import load_example

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_train_mlp_quick(capsys):
    result = load_example("train_mlp").main(["--quick"])
    assert result["test_accuracy"] > 0.8
    assert "test accuracy" in capsys.readouterr().out


def test_train_cnn_quick(capsys):
    result = load_example("train_cnn").main(["--quick"])
    assert result["test_accuracy"] > 0.5
    assert "wall time" in capsys.readouterr().out


@pytest.mark.slow
def test_tiny_transformer_quick(capsys):
    result = load_example("tiny_transformer").main(["--quick"])
    assert result["train_loss"] < result["unigram_entropy"]
    assert "unigram entropy" in capsys.readouterr().out


def test_custom_rule_correct_and_wrong(capsys):
    example = load_example("custom_rule")
    good = example.main([])
    bad = example.main(["--wrong"])
    assert good["relative_error"] < 1e-7
    assert bad["relative_error"] > 1e-2
    out = capsys.readouterr().out
    assert "SiLU: analytic gradient agrees" in out and "WrongSiLU" in out and "DISAGREES" in out


def test_transformer_nodes_carry_module_scopes():
    example = load_example("tiny_transformer")
    model = example.build_model(vocab=11, context=8, dim=8, heads=2, layers=2)
    seen: set[str] = set()

    class Scopes:
        def on_node_recorded(self, node, output):
            seen.add(node.scope)

    with tp.add_observer(Scopes()):
        model(tp.asarray([[1, 2, 3, 4]]))
    assert {"model.blocks.0.attn.q_proj", "model.blocks.1.mlp.0", "model.head"} <= seen


@pytest.mark.slow
def test_train_mlp_full_reaches_95_percent():
    assert load_example("train_mlp").main([])["test_accuracy"] >= 0.95


@pytest.mark.slow
def test_tiny_transformer_loss_falls_well_below_unigram_entropy():
    result = load_example("tiny_transformer").main(["--steps", "150"])
    assert result["train_loss"] < 0.75 * result["unigram_entropy"]


@pytest.mark.slow
def test_train_cnn_full_reaches_95_percent():
    assert load_example("train_cnn").main([])["test_accuracy"] >= 0.95


def test_examples_run_as_scripts():
    import subprocess

    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "custom_rule.py"), "--wrong"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "WrongSiLU: analytic gradient DISAGREES" in done.stdout


def test_examples_with_compile_train_to_the_same_loss_as_eager():
    # NOTE: a warning would mean a graph break (the step ran eagerly): make it an error
    import warnings

    for name, kwargs in (("train_mlp", {"epochs": 1}), ("tiny_transformer", {"steps": 6})):
        example = load_example(name)
        eager = example.train(**kwargs)
        with warnings.catch_warnings():
            warnings.simplefilter("error", tp.CompileWarning)
            compiled = example.train(**kwargs, compile=True)
        assert compiled["train_loss"] == eager["train_loss"], name
