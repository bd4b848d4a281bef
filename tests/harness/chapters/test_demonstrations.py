"""What the chapters' demonstrations promise `course run`: the options a manifest lists are the ones
the demonstration knows (ag02's scenarios are those of its fixture, less the happy path)."""

from __future__ import annotations

import json

from conftest import REPO
from course import chapters


def test_ag02s_scenario_choices_are_its_fixtures_scenarios() -> None:
    options = {option.name: option for option in chapters.get("ag02").demonstration}
    fixture = json.loads((REPO / "fixtures" / "ag02" / "scenarios.json").read_text(encoding="utf-8"))
    assert list(options["scenario"].choices) == [name for name in fixture["scenarios"] if name != "happy"]
    assert set(options) == {"scenario", "live", "model", "allow-edit"}, "the options the demonstration's parser takes"
