"""`loop eval --dask local:2`: the same suite on a real LocalCluster gives the same verdicts."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.eval.test_suite_e2e import Model, assert_verdicts, eval_argv, run_eval, suite, summary_value  # noqa: F401
from tests.fakeserver import FakeServer

pytest.importorskip("distributed")


def test_local_cluster_gives_the_same_verdicts(suite: Path, tmp_path: Path, loop_home: Path) -> None:  # noqa: F811
    with FakeServer(respond=Model()) as server:
        done = run_eval(eval_argv(suite, server, "--dask", "local:2", "--out", str(tmp_path / "out")), loop_home,
                        timeout=180)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "dask local:2" in done.stdout
    assert_verdicts(tmp_path / "out")
    assert summary_value(done.stdout, "completed but check failed") == "1"
