"""Chapter ag03 end to end: the learner's loop on it, and real clients reading what its proxy says.

The official openai SDK must parse the reference proxy's synthesized JSON and event stream into the
final text, exactly as it would parse the real API's."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from conftest import REPO, copy_reference

CHAPTER = "ag03"


def test_the_learner_loop_on_the_proxy_chapter(course, learner: Path) -> None:
    assert course("start", CHAPTER, cwd=learner).code == 0
    stubs = course("check", cwd=learner, timeout=300)
    assert stubs.code == 1 and " passed, " in stubs.out and stubs.out.count("PASS ") == 0, stubs.out + stubs.err
    copy_reference(CHAPTER, learner)
    passing = course("check", cwd=learner, timeout=300)
    assert passing.code == 0, passing.out + passing.err
    same = course("diff", cwd=learner)
    assert same.code == 0 and "no differences" in same.out, same.out + same.err
    demo = course("run", cwd=learner, timeout=300)
    assert demo.code == 0 and "all scenarios behaved as the chapter says" in demo.out, demo.out + demo.err


def test_the_official_sdk_reads_the_synthesized_answers(monkeypatch) -> None:
    openai = pytest.importorskip("openai")
    root = REPO / "reference" / "python" / CHAPTER
    tests = REPO / "tests" / "python" / CHAPTER
    monkeypatch.setenv("COURSE_FIXTURES", str(REPO / "fixtures" / CHAPTER))
    monkeypatch.syspath_prepend(str(tests))
    monkeypatch.syspath_prepend(str(root))
    for name in [m for m in __import__("sys").modules if m == "agent" or m.startswith("agent.") or m == "ag03_streams"]:
        monkeypatch.delitem(__import__("sys").modules, name)
    from ag03_streams import ScriptedUpstream, WeatherTools
    from agent.proxy.server import make_server

    upstream = ScriptedUpstream("tool_call", "final_after_tools", "tool_call", "final_after_tools", "final_text")
    tools = WeatherTools(upstream)
    proxy = make_server(upstream, tools)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{proxy.server_address[1]}/v1", api_key="offline",
                               max_retries=0)
        request = {"model": "gpt-4.1-mini", "input": "Weather in Paris?",
                   "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]}
        answer = client.responses.create(**request)
        assert answer.output_text == "Paris: light rain, 14 C; Lisbon: sunny, 21 C.", answer.output_text
        assert answer.status == "completed" and answer.id == "resp_text2", (answer.status, answer.id)
        with client.responses.stream(**request) as stream:
            deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
            final = stream.get_final_response()
        assert "".join(deltas) == final.output_text == answer.output_text, (deltas, final.output_text)
        assert json.loads(final.model_dump_json())["usage"] == json.loads(answer.model_dump_json())["usage"]
        assert tools.runs == [{"city": "Paris"}, {"city": "Paris"}], f"the tool ran once per request: {tools.runs}"
        with client.responses.stream(model="gpt-4.1-mini", input="Hi") as stream:  # no tools: passed through
            stateless = stream.get_final_response()
        assert stateless.output_text == "It is raining in Paris.", "pass-through reaches the SDK unchanged"
        assert upstream.requests[-1].get("stream") is True and "tools" not in upstream.requests[-1], upstream.requests[-1]
    finally:
        proxy.shutdown()
        proxy.server_close()
