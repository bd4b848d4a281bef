"""The synthetic chapter's catalog."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pkg import calc


def test_add() -> None:
    assert calc.add(2, 3) == 5, f"add(2, 3) should be 5, got {calc.add(2, 3)!r}"


@pytest.mark.parametrize(("a", "b", "want"), [(1, 1, 2), (0, 5, 5), (-2, 2, 0), (100, 200, 300), (10, -4, 6), (-1, -1, -2),
                                             (1000, 1, 1001), (20, 30, 50)],
                         ids=["ones", "zero", "negative", "hundreds", "mixed", "both_negative", "thousand", "tens"])
def test_add_cases(a: int, b: int, want: int) -> None:
    assert calc.add(a, b) == want, f"add({a}, {b}) should be {want}"


def test_total_of_the_fixture() -> None:
    recorded = json.loads((Path(os.environ["COURSE_FIXTURES"]) / "numbers.json").read_text(encoding="utf-8"))
    assert calc.total(recorded["values"]) == recorded["total"], f"total({recorded['values']}) should be {recorded['total']}"


def test_scratch_round_trip() -> None:
    path = Path(os.environ["COURSE_SCRATCH"]) / "numbers.txt"
    path.write_text("1\n2\n", encoding="utf-8")
    numbers = [int(line) for line in path.read_text(encoding="utf-8").split()]
    assert calc.total(numbers) == 3, "total of the numbers read back should be 3"
