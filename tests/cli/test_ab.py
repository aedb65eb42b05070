"""``tpx-inspect ab``: A (as is) against B (rules/kernels overridden), live and offline."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import tpx as tp
import tpx_inspect
from p10 import Op
from tpx_inspect.cli import cli

SCRIPT = """\
import p10
import tpx as tp

p10.manual_seed(0)
w = tp.asarray(p10.randn((4, 3)), requires_grad=True)
b = tp.zeros(3, requires_grad=True)
x = p10.randn((8, 4))
y = p10.randn((8, 3))
for step in range(4):
    with tp.scope("layer"):
        h = (x @ w + b).tanh()
    loss = ((h - y) ** 2).mean()
    loss.backward()
    with tp.no_grad():
        w -= 0.5 * w.grad
        b -= 0.5 * b.grad
    w.grad = None
    b.grad = None
    print("loss", loss.item())
"""

RULES = """\
import p10
import tpx as tp
from p10 import Op
from tpx.rules import RULES

same_tanh = RULES[Op.TANH].vjp


def wrong_tanh(ctx, g):
    return (g * 2.0,)


def matmul_weight_only(ctx, g):
    # exact when the left operand needs no gradient, and saves only that operand
    x = ctx.inputs[0]
    return (None, p10.matmul(p10.matrix_transpose(x), g))


matmul_saves_x = tp.Rule(matmul_weight_only, save=(0,))


def no_ctx(g):
    return (g,)


def fast_tanh(a):
    import numpy as np
    return np.tanh(a)
"""


@pytest.fixture()
def files(tmp_path):
    script = tmp_path / "train_ab.py"
    script.write_text(SCRIPT)
    rules = tmp_path / "ab_rules.py"
    rules.write_text(RULES)
    return str(script), str(rules)


def ab(*args):
    return CliRunner().invoke(cli, ["ab", *args])


def _nodes(report, step=0):
    return next(s for s in report["steps"] if s["step"] == step)["nodes"]


def test_identical_rule_matches_with_zero_differences(files):
    script, rules = files
    r = ab(script, "--rule", f"tanh={rules}:same_tanh", "--json", "--steps", "first:2")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["verdict"] == "matches" and report["first_divergence"] is None
    assert report["losses"]["a"] == report["losses"]["b"] and len(report["losses"]["a"]) == 4
    for step in report["steps"]:
        for n in step["nodes"]:
            for what in ("output", "grad", "grads_out"):
                assert n[what] is None or n[what]["abs"] == 0.0, (n, what)
    tanh = [n for n in _nodes(report) if n["op"] == "tanh"]
    # the node names the function that ran: the built-in rule, re-registered
    assert tanh[0]["overrides_b"] == {"rule": "tpx.rules:_tanh"}


def test_wrong_rule_diverges_and_names_the_first_node(files):
    script, rules = files
    r = ab(script, "--rule", f"tanh={rules}:wrong_tanh")
    assert r.exit_code == 1, r.output
    assert "first at step 0, backward: tanh (node" in r.stdout
    assert "scope layer" in r.stdout and "train_ab.py:11" in r.stdout
    r = ab(script, "--rule", f"tanh={rules}:wrong_tanh", "--json")
    first = json.loads(r.stdout)["first_divergence"]
    assert (first["step"], first["phase"], first["op"], first["scope"]) == (
        0,
        "backward",
        "tanh",
        "layer",
    )
    assert first["source"].endswith("train_ab.py:11 in <module>")


def test_a_rule_that_saves_less_lowers_saved_bytes_on_exactly_its_nodes(files):
    script, rules = files
    spec = f"matmul={rules}:matmul_weight_only"
    r = ab(script, "--rule", spec, "--json", "--steps", "first:1")
    # NOTE: the override declares nothing, so it inherits the built-in saves: no change
    same = json.loads(r.stdout)
    assert all(n["saved_bytes_a"] == n["saved_bytes_b"] for n in _nodes(same))
    r = ab(script, "--rule", f"matmul={rules}:matmul_saves_x", "--json", "--steps", "first:1")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    changed = [n for n in _nodes(report) if n["saved_bytes_a"] != n["saved_bytes_b"]]
    assert [n["op"] for n in changed] == ["matmul"]
    assert changed[0]["saved_bytes_b"] == 8 * 4 * 4  # x alone (float32), not x and w
    assert changed[0]["saved_bytes_a"] == 8 * 4 * 4 + 4 * 3 * 4
    step = report["steps"][0]
    assert step["peak_saved_bytes_b"] == step["peak_saved_bytes_a"] - 4 * 3 * 4


def test_kernel_override_is_compared_too(files):
    script, rules = files
    r = ab(script, "--kernel", f"tanh={rules}:fast_tanh", "--json", "--steps", "first:1")
    assert r.exit_code == 0, r.output
    tanh = [n for n in _nodes(json.loads(r.stdout)) if n["op"] == "tanh"]
    assert tanh[0]["overrides_b"] == {"kernel": "ab_rules:fast_tanh"}


@pytest.mark.parametrize(
    "args, message",
    [
        (["--rule", "tanhh=RULES:same_tanh"], "unknown op 'tanhh'"),
        (["--rule", "tanh=RULES:no_ctx"], "vjp must take (ctx, grad_output)"),
        (["--rule", "tanh=RULES:missing"], "has no attribute 'missing'"),
        (["--rule", "tanh"], "expected OP=MODULE:FUNCTION"),
        (["--kernel", "add=RULES:fast_tanh"], "kernel must take 2 array(s)"),
        (["--rule", "tanh=no_such_module_xyz:f"], "cannot import no_such_module_xyz"),
    ],
)
def test_bad_input_is_a_one_line_error_with_exit_2(files, args, message):
    script, rules = files
    r = ab(script, *[a.replace("RULES", rules) for a in args])
    assert r.exit_code == 2, r.output
    assert message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def _double(ctx, g):
    return (g * 2,)


def test_trace_records_overrides_and_loads_them_back(tmp_path):
    with tpx_inspect.capture(timing=False, values="all") as cap:
        x = tp.asarray([0.5, 1.0], requires_grad=True)
        with tp.override_rule(Op.TANH, _double):
            y = x.tanh()
        (y * x).sum().backward()
    path = tmp_path / "t.json"
    cap.save(str(path))
    doc = json.loads(path.read_text())
    assert "overrides" in doc["runs"][0]["structures"][0]["nodes"]
    nodes = tpx_inspect.load(str(path)).graphs[0].nodes
    marked = [(n.op, n.overrides) for n in nodes if n.overrides]
    assert marked == [("tanh", {"rule": f"{__name__}:{_double.__qualname__}"})]
    # a trace without overrides has no such column (older readers load it unchanged)
    with tpx_inspect.capture(timing=False) as cap:
        (tp.asarray([0.5], requires_grad=True).tanh()).sum().backward()
    cap.save(str(path))
    assert "overrides" not in json.loads(path.read_text())["runs"][0]["structures"][0]["nodes"]


def test_offline_reruns_the_backward_of_a_saved_trace(files, tmp_path):
    script, rules = files
    run_dir = tmp_path / "run"
    r = CliRunner().invoke(
        cli, ["run", script, "-o", str(run_dir), "--values", "all", "--policy", "first:1"]
    )
    assert r.exit_code == 0, r.output
    same = ab(str(run_dir), "--rule", f"tanh={rules}:same_tanh", "--json")
    assert same.exit_code == 0, same.output
    report = json.loads(same.stdout)
    tanh = [n for n in _nodes(report) if n["op"] == "tanh"]
    assert tanh and tanh[0]["grads_out"]["abs"] == 0.0
    wrong = ab(str(run_dir), "--rule", f"tanh={rules}:wrong_tanh", "--json")
    assert wrong.exit_code == 1, wrong.output
    first = json.loads(wrong.stdout)["first_divergence"]
    assert (first["phase"], first["op"], first["scope"]) == ("backward", "tanh", "layer")
    # B's saved bytes follow B's rule: the matmul keeps x alone
    less = ab(str(run_dir), "--rule", f"matmul={rules}:matmul_saves_x", "--json")
    assert less.exit_code == 0, less.output
    changed = [
        n for n in _nodes(json.loads(less.stdout)) if n["saved_bytes_a"] != n["saved_bytes_b"]
    ]
    assert [(n["op"], n["saved_bytes_b"]) for n in changed] == [("matmul", 8 * 4 * 4)]
    # --propagate: B's gradients reach every node; the leaves' differences equal the live run's
    live = json.loads(ab(script, "--rule", f"tanh={rules}:wrong_tanh", "--json").stdout)
    prop = ab(str(run_dir), "--rule", f"tanh={rules}:wrong_tanh", "--propagate", "--json")
    assert prop.exit_code == 1, prop.output
    offline = {n["id"]: n for n in _nodes(json.loads(prop.stdout))}
    for n in _nodes(live):
        if n["op"] is None:  # the leaves w and b: their gradients
            assert offline[n["id"]]["grad"]["abs"] == pytest.approx(n["grad"]["abs"], rel=1e-6)
            assert n["grad"]["abs"] > 0
    same = ab(str(run_dir), "--rule", f"tanh={rules}:same_tanh", "--propagate", "--json")
    assert same.exit_code == 0
    grads = [n["grad"]["abs"] for n in _nodes(json.loads(same.stdout)) if n["grad"]]
    assert grads and max(grads) == 0.0
    kernel = ab(str(run_dir), "--kernel", f"tanh={rules}:fast_tanh")
    assert kernel.exit_code == 2 and "--kernel needs a script" in kernel.stderr
