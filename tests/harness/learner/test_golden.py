"""`course check --json` on the synthetic chapter, compared with recorded results (exercism's
golden results.json): the stubs, the reference, one documented bug, code that does not build.

After an intended change of the output, record again with COURSE_RECORD_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import start_in_process, syn_reference

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def compare(name: str, results: Path) -> None:
    got = json.loads(results.read_text(encoding="utf-8"))
    path = GOLDEN / f"{name}.json"
    if os.environ.get("COURSE_RECORD_GOLDEN"):
        path.write_text(json.dumps(got, indent=2) + "\n", encoding="utf-8")
    want = json.loads(path.read_text(encoding="utf-8"))
    assert got == want, f"{name}: results.json differs from {path}:\n{json.dumps(got, indent=2)}"


@pytest.mark.parametrize(("name", "code", "change"), [
    ("stubs", 1, None),
    ("reference", 0, lambda calc: calc),
    ("mutant-m1", 1, lambda calc: calc.replace("return a + b", "return a - b")),
    ("syntax-error", 1, lambda calc: calc + "\ndef broken(:\n"),
])
def test_results_json_is_as_recorded(syn, content: Path, learner: Path, tmp_path: Path, name: str, code: int,
                                     change) -> None:  # noqa: ANN001
    start_in_process(content, learner)
    if change is not None:
        syn_reference(content, learner)
        calc = learner / "pkg" / "calc.py"
        calc.write_text(change(calc.read_text()))
    results = tmp_path / "results.json"
    ran = syn("check", "--json", str(results), cwd=learner)
    assert ran.code == code, ran.out + ran.err
    compare(name, results)
