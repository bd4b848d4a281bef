"""Offline demonstration of chapter ag00 (`course run ag00`).

Runs the code under test (the learner's agent/, or the reference) on authored
sample replies: no network, no API key, no cost. Prints, for each path, what was
sent, how each reply was classified, which calls ran and how the run ended.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent))  # appended: never shadows the code under test

import ag00_samples as samples  # noqa: E402
from agent.contract import loop, orders, request  # noqa: E402


def _label(item: dict) -> str:
    """A short name for an input item: its type, or the role of a plain message."""
    return item.get("type") or item.get("role", "?")


def _show(title: str, note: str, replies: list[dict], **limits: int) -> loop.Outcome:
    print(f"\n== {title}")
    print(f"   {note}")
    script = samples.Script(*replies)
    body = request.build_request(samples.QUESTION, model=samples.MODEL)
    outcome = loop.run_loop(body, script, orders.TRUSTED_PRINCIPAL, **limits)
    for step, sent in zip(outcome.steps, script.requests):
        print(f"   turn {step.turn}: sent input [{', '.join(_label(i) for i in sent['input'])}]")
        print(f"           reply classified as {step.kind}")
        for call_id in step.executed:
            result = next(r for r in outcome.results if r["call_id"] == call_id)
            print(f"           ran {call_id} -> function_call_output {result['output']}")
    verdict = outcome.verdict
    extra = []
    if verdict is not None and verdict.reason:
        extra.append(f"reason {verdict.reason!r}")
    if verdict is not None and verdict.kind == "http_error":
        extra.append(f"retryable {verdict.retryable}")
    if outcome.denial is not None:
        extra.append(f"the denial holds only {json.dumps(outcome.denial)}")
    if outcome.status == loop.BUDGET_EXHAUSTED and verdict is not None:
        extra.append(f"a batch of {len(verdict.calls)} more did not run, {outcome.calls} of {limits.get('max_calls', loop.MAX_CALLS)} used")
    if outcome.answer is not None:
        extra.append(f"answer {json.dumps(outcome.answer, sort_keys=True)}")
    tail = f" ({'; '.join(extra)})" if extra else ""
    print(f"   outcome: {outcome.status}; tool calls {outcome.calls}; results sent back {len(outcome.results)}{tail}")
    return outcome


def main() -> int:
    print("ag00 offline demonstration: authored sample replies (fixtures/ag00), no network, no API key.")
    print(f"code under test: {Path(request.__file__).resolve().parents[1]}")
    principal = orders.TRUSTED_PRINCIPAL
    print(f"trusted principal (from the session, never from the model): tenant {principal.tenant}, user {principal.user}")

    _show("normal", "The model asks to read o-1, then answers with exactly the receipt.",
          [samples.sample("tool_call_o1"), samples.sample("answer_o1")])
    _show("cross-tenant", "The model asks for o-2, an order of shop-b.",
          [samples.sample("tool_call_o2_cross_tenant"), samples.sample("answer_o1")])
    _show("bounded loop", "The model keeps asking for o-1 under new call_ids; max_calls=2, max_turns=3.",
          [samples.tool_call(f"call_again_{n}") for n in range(1, 5)], max_calls=2, max_turns=3)
    _show("refusal", "The model declines; the refusal part is not output_text.",
          [samples.sample("refusal")])
    _show("incomplete", "Generation stopped at max_output_tokens with half an answer written.",
          [samples.sample("incomplete_max_tokens")])
    print("\nOnly answer_ready means the task is done; every other status is a different stop, kept apart.")
    return 0


if __name__ == "__main__":
    # code of yours that raises (a stub not written yet) is one line from `course run`, not a traceback
    raise SystemExit(main())
