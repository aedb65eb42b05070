"""scikit-learn's Array API dispatch on p10 tensors (issue 18): PCA (full and randomized),
LinearDiscriminantAnalysis and Ridge fit on p10 tensors match their fits on NumPy arrays.

scikit-learn (pinned in requirements-dev.txt, which CI installs) needs ``SCIPY_ARRAY_API=1``
before scipy is first imported, and p10 imports scipy: the fits run in a fresh interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="scikit-learn is not installed (requirements-dev.txt)")
pytestmark = pytest.mark.slow  # a fresh interpreter imports scikit-learn and scipy (~20 s)

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = r"""
import json, warnings
import numpy as np
import sklearn
import p10
from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.linear_model import Ridge

warnings.simplefilter("ignore", UserWarning)  # solver fallbacks sklearn announces for dispatch
rng = np.random.default_rng(0)
X = rng.normal(size=(80, 6)) @ rng.normal(size=(6, 6))
y = (X[:, 0] + 0.5 * rng.normal(size=80) > 0).astype(np.int64) + (X[:, 1] > 1)
t = X @ rng.normal(size=6) + 0.1 * rng.normal(size=80)

def models():
    return {
        "pca-full": (PCA(n_components=3, svd_solver="full"), (X,), "transform"),
        "pca-randomized": (
            PCA(n_components=3, svd_solver="randomized", random_state=0, iterated_power=7),
            (X,),
            "transform",
        ),
        "lda": (LinearDiscriminantAnalysis(), (X, y), "predict_proba"),
        "ridge": (Ridge(alpha=1.0, solver="svd"), (X, t), "predict"),
    }

out = {}
for name, (model, args, method) in models().items():
    ref = getattr(model.fit(*args), method)(X)
    ours_model = models()[name][0]
    with sklearn.config_context(array_api_dispatch=True):
        fitted = ours_model.fit(*[p10.asarray(a) for a in args])
        got = getattr(fitted, method)(p10.asarray(X))
    out[name] = {"type": type(got).__module__, "ref": np.asarray(ref).tolist(),
                 "got": np.asarray(got).tolist()}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def fits() -> dict:
    env = dict(os.environ, SCIPY_ARRAY_API="1", PYTHONPATH=str(ROOT))
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def _same_up_to_column_signs(got: np.ndarray, ref: np.ndarray) -> None:
    signs = np.sign(np.sum(got * ref, axis=0))
    np.testing.assert_allclose(got * signs, ref, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("name", ["pca-full", "pca-randomized"])
def test_pca_on_p10_matches_numpy(fits: dict, name: str) -> None:
    r = fits[name]
    assert r["type"].startswith("p10")
    _same_up_to_column_signs(np.array(r["got"]), np.array(r["ref"]))


@pytest.mark.parametrize("name", ["lda", "ridge"])
def test_lda_and_ridge_on_p10_match_numpy(fits: dict, name: str) -> None:
    r = fits[name]
    assert r["type"].startswith("p10")
    np.testing.assert_allclose(np.array(r["got"]), np.array(r["ref"]), rtol=1e-7, atol=1e-9)
