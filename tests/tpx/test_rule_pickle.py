"""TPX's rules pickle by reference (issue 12): a rule of ``tpx.rules.RULES``, its ``vjp`` and its
``real_vjp`` load as the very same objects, in this process and in a fresh one, so that a rule
shipped to a worker is still the table's (the checks treat TPX's rules by identity)."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import tpx as tp
from p10 import Op
from tpx.rules import RULES

ROOT = Path(__file__).resolve().parents[2]
BUILTIN = {op: rule for op, rule in RULES.items() if isinstance(op, Op)}


def _double(ctx, g):
    return (g * 2.0,)


@pytest.mark.parametrize("protocol", [2, pickle.DEFAULT_PROTOCOL, pickle.HIGHEST_PROTOCOL])
def test_every_rule_and_vjp_of_the_table_loads_as_the_same_object(protocol):
    assert len(BUILTIN) > 90
    wrapped = 0
    for op, rule in BUILTIN.items():
        wrapped += rule.vjp is not rule.real_vjp
        for obj in (rule, rule.vjp, rule.real_vjp):
            data = pickle.dumps(obj, protocol=protocol)
            assert pickle.loads(data) is obj, (op, obj)
            assert len(data) < 200, (op, len(data))  # a name, never the function's code
    assert wrapped > 50  # the complex-convention wrappers are among them


def test_a_rule_that_is_not_the_tables_pickles_by_value_with_its_vjp_by_reference(monkeypatch):
    mine = tp.Rule(_double, save=(0,))
    back = pickle.loads(pickle.dumps(mine))
    assert back is not mine and back == mine and back.vjp is _double
    # a rule planted in the table is not TPX's own: it must not load as the original
    original = RULES[Op.TANH]
    monkeypatch.setitem(RULES, Op.TANH, mine)
    assert pickle.loads(pickle.dumps(RULES[Op.TANH])) == mine
    assert pickle.loads(pickle.dumps(original)) is original


def test_the_override_mark_still_names_the_rule_inside_the_wrapper():
    with tp.override_rule(Op.TANH, RULES[Op.TANH].vjp):
        y = tp.asarray([0.5], requires_grad=True).tanh()
    assert y.grad_fn.overrides == {"rule": "tpx.rules:_tanh"}


def test_pickles_load_in_a_fresh_process_as_its_table_objects(tmp_path):
    ops = sorted(BUILTIN, key=lambda op: op.value)
    payload = [(op, BUILTIN[op], BUILTIN[op].vjp, BUILTIN[op].real_vjp) for op in ops]
    data = pickle.dumps(payload)
    assert len(data) < 150 * len(ops)  # names only (a by-value pickle is KBs per rule)
    (tmp_path / "rules.pkl").write_bytes(data)
    code = (
        "import pickle, sys\n"
        "items = pickle.loads(open(sys.argv[1], 'rb').read())\n"
        "from tpx.rules import RULES\n"
        "same = [r is RULES[op] and v is r.vjp and rv is r.real_vjp for op, r, v, rv in items]\n"
        "print(sum(same), len(same))\n"
    )
    env = {"PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "rules.pkl")],
        env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(len(ops)), str(len(ops))]
