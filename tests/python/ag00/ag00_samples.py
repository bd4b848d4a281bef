"""The authored sample replies of fixtures/ag00 and a scripted model, shared by the catalog and the demo."""

from __future__ import annotations

import copy
import json
import os
from functools import lru_cache
from pathlib import Path

from agent.contract import loop

FIXTURES = Path(os.environ["COURSE_FIXTURES"])  # set by the harness for catalog runs and `course run`
QUESTION = "What is the status of order o-1?"
MODEL = "sample-model"


@lru_cache(maxsize=None)
def _load(name: str) -> str:
    return (FIXTURES / f"{name}.json").read_text(encoding="utf-8")


def sample(name: str) -> dict:
    """A fresh copy of one authored sample: {"_note", "_what", "http_status", "body"}."""
    return json.loads(_load(name))


def body(name: str) -> dict:
    return sample(name)["body"]


def tool_call(call_id: str, order_id: str = "o-1") -> dict:
    """The o-1 tool-call sample with its own call_id (and item id) and order id."""
    chosen = sample("tool_call_o1")
    call = chosen["body"]["output"][-1]
    call.update(call_id=call_id, id="fc_" + call_id, arguments=json.dumps({"order_id": order_id}))
    return chosen


def answer(text: str) -> dict:
    """The answer sample with its text replaced."""
    chosen = sample("answer_o1")
    chosen["body"]["output"][0]["content"][0]["text"] = text
    return chosen


def batch(*calls: tuple[str, str]) -> dict:
    """One reply holding a function_call for each (call_id, order_id), in that order."""
    chosen = sample("two_calls")
    template = chosen["body"]["output"][0]
    chosen["body"]["output"] = [
        {**template, "id": "fc_" + call_id, "call_id": call_id, "arguments": json.dumps({"order_id": order_id})}
        for call_id, order_id in calls
    ]
    return chosen


def base_request() -> dict:
    """A request written out by hand, so that loop tests do not depend on build_request."""
    return {
        "model": MODEL,
        "input": [
            {"role": "developer", "content": "Use read_order; reply with its receipt as JSON."},
            {"role": "user", "content": QUESTION},
        ],
        "tools": [{"type": "function", "name": "read_order", "strict": True, "parameters": {"type": "object"}}],
        "max_output_tokens": 500,
    }


class Script:
    """Stands in for the model: answers each request with the next scripted sample and records the request."""

    def __init__(self, *samples: dict) -> None:
        self.samples = list(samples)
        self.requests: list[dict] = []

    def __call__(self, request: dict) -> "loop.Reply":
        self.requests.append(copy.deepcopy(request))
        turn = len(self.requests)
        assert turn <= len(self.samples), (
            f"the loop asked the model for turn {turn}, but only {len(self.samples)} replies were scripted"
        )
        chosen = self.samples[turn - 1]
        return loop.Reply(chosen["http_status"], copy.deepcopy(chosen["body"]))
