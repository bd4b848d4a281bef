"""A chapter's demonstration takes options of its own: ag02's offline laboratory, end to end, as a learner runs it."""

from __future__ import annotations

from pathlib import Path

import yaml

from conftest import REPO, copy_reference

CHAPTER = "ag02"
MANIFEST = yaml.safe_load((REPO / "chapters" / CHAPTER / "chapter.yaml").read_text())
SCENARIOS = ["retry", "disconnect", "malformed", "output-limit"]


def test_learner_loop_and_every_scenario(course, learner: Path) -> None:
    assert course("start", CHAPTER, cwd=learner).code == 0

    stub = course("run", "--scenario", "disconnect", cwd=learner)  # no chapter named: the current one
    assert stub.code == 1, stub.out + stub.err
    assert "Not written yet" in stub.out and "Traceback" not in stub.out + stub.err

    failing = course("check", cwd=learner, timeout=300)
    assert failing.code == 1 and f"0 passed, {len(MANIFEST['catalog'])} failed" in failing.out, failing.out[-800:]

    copy_reference(CHAPTER, learner)
    passing = course("check", cwd=learner, timeout=300)
    assert passing.code == 0, passing.out[-2000:] + passing.err

    happy = course("run", cwd=learner)
    assert happy.code == 0 and "return a + b" in happy.out, happy.out + happy.err
    for scenario in SCENARIOS:
        ran = course("run", CHAPTER, "--scenario", scenario, cwd=learner)
        assert ran.code == 0, f"--scenario {scenario}: exit {ran.code}\n{ran.out}{ran.err}"
        assert "as expected" in ran.out and "tool executions 0" in ran.out, f"--scenario {scenario}:\n{ran.out}"


def test_a_scenario_fails_when_a_tool_runs(course, learner: Path) -> None:
    # A learner whose assembly acts on output_item.done: the disconnect scenario runs the edit, so it must not pass.
    assert course("start", CHAPTER, cwd=learner).code == 0
    copy_reference(CHAPTER, learner)
    mutant = next(m for m in MANIFEST["tracks"]["python"]["mutants"] if m["id"] == "r03")
    target = learner / mutant["file"]
    target.write_text(target.read_text().replace(mutant["find"], mutant["replace"]))
    ran = course("run", CHAPTER, "--scenario", "disconnect", cwd=learner)
    assert ran.code == 1, ran.out + ran.err
    assert "DEMONSTRATION FAILED" in ran.out and "expected 0 executions, got 1" in ran.out, ran.out


def test_demonstration_usage_errors_exit_2(course, learner: Path) -> None:
    assert course("start", CHAPTER, cwd=learner).code == 0
    copy_reference(CHAPTER, learner)
    for args in (["--scenario", "bogus"], ["--live"], ["--model", "m"], ["--live", "--model", "m", "--scenario", "retry"]):
        ran = course("run", CHAPTER, *args, cwd=learner, env={"OPENAI_API_KEY": ""})
        assert ran.code == 2, f"{args}: exit {ran.code}\n{ran.out}{ran.err}"
        assert "Traceback" not in ran.out + ran.err, f"{args}: {ran.err}"
    keyless = course("run", CHAPTER, "--live", "--model", "m", cwd=learner, env={"OPENAI_API_KEY": ""})
    assert keyless.code == 2 and "OPENAI_API_KEY" in keyless.err, keyless.out + keyless.err


def test_the_live_path_against_the_fake_model_by_url(course, tmp_path: Path) -> None:
    # --live is never pointed at a real provider by tests; here it talks to the course fake model by URL.
    import json

    from course import fake_model

    turns = [json.loads((REPO / "fixtures" / CHAPTER / f"{name}.json").read_text())["events"]
             for name in ("demo_read", "demo_edit", "demo_answer")]
    with fake_model.FakeModel() as fm:
        env = {"OPENAI_BASE_URL": fm.base_url, "OPENAI_API_KEY": "sk-test"}
        fm.script(*(fake_model.events(*events) for events in turns))
        allowed = course("run", CHAPTER, "--reference", "--live", "--model", "gpt-4.1-mini", "--allow-edit", cwd=tmp_path, env=env)
        assert allowed.code == 0, allowed.out + allowed.err
        assert "return a + b" in allowed.out and "edited calculator.py" in allowed.out, allowed.out
        sent = [r.body for r in fm.requests if r.path == fake_model.RESPONSES_PATH]
        assert len(sent) == 3 and all(b["store"] is False and b["stream"] is True for b in sent), sent
        outputs = [i for i in sent[2]["input"] if i.get("type") == "function_call_output"]
        assert [o["call_id"] for o in outputs] == ["call_demo_read", "call_demo_edit"], outputs

        fm.clear()
        fm.script(*(fake_model.events(*events) for events in turns))
        refused = course("run", CHAPTER, "--reference", "--live", "--model", "gpt-4.1-mini", cwd=tmp_path, env=env)
        assert refused.code == 0 and "edits are refused" in refused.out and "return a - b" in refused.out, refused.out
