"""The replay check (plan of tpx.compile vs eager, bitwise): passes on a correct function,
fails on a planted bug, and reports a graph break as skipped, never as passed."""

from __future__ import annotations

import numpy as np

import tpx as tp
import tpx._plan_codegen as tpx_codegen
from tpx_inspect.checks import run_all_checks
from tpx_inspect.checks.compiled import replay_check


def test_replay_check_passes_on_an_mlp_like_function() -> None:
    rng = np.random.default_rng(0)
    w = tp.asarray(rng.normal(size=(4, 3)), requires_grad=True)
    x = tp.asarray(rng.normal(size=(5, 4)), requires_grad=True)
    result = replay_check(lambda a, b: (a @ b).tanh().sum(), [x, w])
    assert result.passed and result.checked == 2 and result.skipped == 0


def plant_wrong_lowering(monkeypatch) -> None:
    """A planted bug in the lowering: the plan's first multiply runs as an add."""
    from dataclasses import replace

    import tpx._compile as compile_module

    lower = compile_module.lower

    def wrong(plan):
        plan = lower(plan)
        for seg in plan.segments:
            for k, step in enumerate(seg.steps):
                if step.op == "mul":
                    seg.steps[k] = replace(step, kernel=np.add)
                    seg.run = tpx_codegen.generate(seg, plan.slots, plan.backend_of)
                    return plan
        return plan

    monkeypatch.setattr(compile_module, "lower", wrong)


def test_replay_check_fails_on_a_planted_bug(monkeypatch) -> None:
    plant_wrong_lowering(monkeypatch)
    x = tp.asarray([1.0, 2.0], requires_grad=True)
    result = replay_check(lambda a: (a * a).sin(), [x])
    assert not result.passed
    first = result.errors[0]
    assert first.category == "replay" and "differs from eager" in first.message
    assert first.name == "SinBackward"


def test_a_stateful_function_is_skipped_not_compared() -> None:
    calls = [0]

    def drifting(a: tp.Tensor) -> tp.Tensor:
        calls[0] += 1
        return a * float(calls[0])

    result = replay_check(drifting, [tp.asarray([1.0, 2.0], requires_grad=True)])
    assert result.checked == 0 and result.status.label == "SKIPPED"
    assert "two eager calls differ" in result.notes[0]


def test_a_graph_break_is_skipped_not_passed() -> None:
    x = tp.asarray([1.0, 2.0], requires_grad=True)
    result = replay_check(lambda a: a * a.sum().item(), [x])
    assert result.checked == 0 and result.skipped == 2 and result.status.label == "SKIPPED"
    assert "data-dependent read" in result.notes[0]


def test_run_all_checks_includes_replay() -> None:
    x = tp.asarray([[0.5, -1.0], [2.0, 0.3]], requires_grad=True)
    report = run_all_checks(lambda a: (a @ a).tanh().sum(), [x])
    assert report.results[-1].check == "replay" and report.results[-1].checked == 2


# -- tpx-inspect check SCRIPT: replays of a script's compiled functions vs eager -------------

STEP_SCRIPT = """
import tpx as tp
import tpx.optim as optim
w = tp.asarray([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
opt = optim.Adam([w], lr=0.1)

@tp.compile
def step(x):
    opt.zero_grad()
    loss = (x @ w).tanh().sum(){extra}
    loss.backward()
    opt.step()
    return loss

for _ in range(5):
    step(tp.asarray([[1.0, 2.0], [3.0, -4.0]]))
"""


def check_script(tmp_path, extra: str = ""):
    from click.testing import CliRunner

    from tpx_inspect.cli import cli

    script = tmp_path / "step.py"
    script.write_text(STEP_SCRIPT.replace("{extra}", extra))
    r = CliRunner().invoke(cli, ["check", str(script), "--json"], catch_exceptions=False)
    import json

    results = {c["check"]: c for c in json.loads(r.stdout)["checks"]}
    return r.exit_code, results


def test_check_script_replays_a_compiled_training_step(tmp_path) -> None:
    code, results = check_script(tmp_path)
    replay = results["replay"]
    assert code == 0 and replay["status"] == "pass" and replay["checked"] == 2
    assert results["local"]["checked"] > 0  # the graph checks still see the eager graph


def test_check_script_fails_on_a_planted_lowering_bug(tmp_path, monkeypatch) -> None:
    plant_wrong_lowering(monkeypatch)
    code, results = check_script(tmp_path)
    replay = results["replay"]
    assert code == 1 and replay["status"] == "fail"
    assert "differs from eager" in replay["findings"][0]["message"]


def test_check_script_reports_a_graph_break_as_skipped(tmp_path) -> None:
    _, results = check_script(tmp_path, " * float(w.sum().item())")
    replay = results["replay"]
    assert replay["status"] == "skipped" and replay["checked"] == 0
    assert "data-dependent read" in json_notes(replay)


def json_notes(result: dict) -> str:
    return " ".join(str(v) for k, v in result.items() if k in ("notes", "skips", "reasons"))


def test_a_script_without_compile_has_no_replay_row(tmp_path) -> None:
    from tpx_inspect.checks.compiled import replaying

    with replaying() as check:
        (tp.ones(2, requires_grad=True) * 2).sum().backward()
    assert check.result() is None


# -- optimizer state: compared as well as the parameters ------------------------------------


def plant_step_count_bug(monkeypatch) -> None:
    """A planted bug in the replay of an optimizer step (an island, or the prologue of a step
    lowered into kernels): it counts one step too many. The parameters of that call are
    still right (the bias corrections were computed before)."""
    import tpx._compile as compile_module

    lower = compile_module.lower

    def counting_twice(fn):
        def step(opt, *args, **kwargs):
            out = fn(opt, *args, **kwargs)
            for entry in opt.state.values():
                entry["step"] = entry.get("step", 0) + 1
            return out

        return step

    def counting_prologue(prologue, opt):
        def wrong_prologue(b):
            ok = prologue(b)
            for entry in opt.state.values():
                entry["step"] = entry.get("step", 0) + 1
            return ok

        return wrong_prologue

    def wrong(plan):
        plan = lower(plan)
        for seg in plan.segments:
            if seg.island is not None and seg.island[0].__name__ == "step":
                fn, args, kwargs = seg.island
                seg.island = (counting_twice(fn), args, kwargs)
            if seg.prologue is not None:
                seg.prologue = counting_prologue(seg.prologue, seg.fallback[1][0])
        return plan

    monkeypatch.setattr(compile_module, "lower", wrong)


def test_check_script_fails_on_a_wrong_bias_correction_in_lowered_kernels(
    tmp_path, monkeypatch
) -> None:
    import tpx._plan_optim as plan_optim

    real = plan_optim.Lowering.prologue

    def wrong(self):
        fn = real(self)
        slots = [i for _, _, scalars, _ in self.params for n, i in scalars if n == "lr/(1-b1^t)"]

        def prologue(b):
            ok = fn(b)
            for i in slots:  # NOTE: the planted bug: a bias correction off by one step
                b[i] = b[i] * 1.0001
            return ok

        return prologue

    monkeypatch.setattr(plan_optim.Lowering, "prologue", wrong)
    code, results = check_script(tmp_path)
    replay = results["replay"]
    assert code == 1 and replay["status"] == "fail"
    assert any("differs from eager" in f["message"] for f in replay["findings"])


def test_check_script_compares_optimizer_state(tmp_path, monkeypatch) -> None:
    plant_step_count_bug(monkeypatch)
    code, results = check_script(tmp_path)
    replay = results["replay"]
    assert code == 1 and replay["status"] == "fail"
    messages = [f["message"] for f in replay["findings"]]
    assert messages and all("Adam state 0 step" in m for m in messages)  # not a parameter


def test_call_state_holds_sgd_momentum_and_adam_moments() -> None:
    import tpx.optim as optim

    seen: dict[str, list[str]] = {}
    for name, make in (
        ("sgd", lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9)),
        ("adam", lambda ps: optim.Adam(ps, lr=0.1)),
    ):
        w = tp.ones(3, requires_grad=True)
        opt = make([w])

        @tp.compile
        def step(x, w=w, opt=opt):
            opt.zero_grad()
            (w * x).sum().backward()
            opt.step()

        def handler(call, name=name):
            out = call.record() if call.plan is None else call.replay()
            seen[name] = [n for n, _ in call.state()]
            return out

        with tp.CompiledFunction.intercept(handler):
            for _ in range(3):
                step(tp.full((3,), 2.0))
    assert "island 0 SGD state 0 momentum_buffer" in seen["sgd"]
    assert "island 0 SGD param_groups 0 lr" in seen["sgd"]
    adam = seen["adam"]
    for entry in ("exp_avg", "exp_avg_sq", "step"):
        assert f"island 0 Adam state 0 {entry}" in adam
