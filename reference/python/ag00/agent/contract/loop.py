"""The bounded tool loop: ask, classify, execute within budget, return results, verify.

The loop ends in exactly one status. Only ``answer_ready`` means the task is
done: the model's final answer equals a receipt that a tool call produced.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Callable

from agent.contract.classify import Kind, Verdict, classify_response
from agent.contract.orders import TRUSTED_PRINCIPAL, Principal, execute_call

MAX_TURNS = 3  # model calls per run
MAX_CALLS = 2  # tool calls per run, across all turns

ANSWER_READY = "answer_ready"
UNVERIFIED_ANSWER = "unverified_answer"
BUDGET_EXHAUSTED = "budget_exhausted"
TURN_LIMIT = "turn_limit"
DUPLICATE_CALL_ID = "duplicate_call_id"


@dataclass(frozen=True)
class Reply:
    """One HTTP exchange as the loop sees it: the status code and the parsed JSON body."""

    http_status: int
    body: Any


# Sends one request body to the model and returns its reply.
Send = Callable[[dict[str, Any]], Reply]


@dataclass
class Step:
    """One turn: what the reply was classified as, and which calls ran."""

    turn: int
    kind: str
    executed: list[str] = field(default_factory=list)  # call_ids, in the order they ran


@dataclass
class Outcome:
    """How a run ended."""

    status: str  # answer_ready, unverified_answer, a limit, a refusal reason, or a Kind value
    calls: int  # tool calls executed, counted against the budget
    results: list[dict[str, Any]]  # the function_call_output items sent back
    steps: list[Step]
    verdict: Verdict | None = None  # the last classification (retryable, reason)
    denial: dict[str, str] | None = None  # what a refused tool call returned
    answer: Any = None  # the parsed final answer, when the model gave one


def function_call_output(call_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    # course: begin function_call_output
    """The input item that returns ``payload`` as the result of the call ``call_id``."""
    return {"type": "function_call_output", "call_id": call_id, "output": json.dumps(payload, sort_keys=True)}
    # course: end function_call_output


def run_loop(
    request: dict[str, Any],
    send: Send,
    principal: Principal = TRUSTED_PRINCIPAL,
    *,
    max_turns: int = MAX_TURNS,
    max_calls: int = MAX_CALLS,
) -> Outcome:
    # course: begin run_loop
    """Drive ``request`` to one final status, calling ``send`` at most ``max_turns`` times."""
    conversation = list(request["input"])  # a copy: the caller's request stays as it was
    results: list[dict[str, Any]] = []
    receipts: list[dict[str, Any]] = []
    steps: list[Step] = []
    seen_ids: set[str] = set()
    calls = 0
    verdict: Verdict | None = None

    def finish(status: str, **extra: Any) -> Outcome:
        return Outcome(status, calls, results, steps, verdict, **extra)

    for turn in range(1, max_turns + 1):
        # A body of its own, to the last dict: send may keep it or edit it, and neither the
        # caller's request (its tools, its messages) nor the conversation may feel either.
        reply = send(copy.deepcopy({**request, "input": conversation}))
        verdict = classify_response(reply.body, reply.http_status)
        step = Step(turn, verdict.kind.value)
        steps.append(step)

        if verdict.kind is Kind.TEXT:
            answer = _parse_json(verdict.text)
            return finish(ANSWER_READY if answer in receipts else UNVERIFIED_ANSWER, answer=answer)
        if verdict.kind is not Kind.TOOL_REQUESTS:
            return finish(verdict.kind.value)  # refused, incomplete, http_error, ...: never retried here

        # The next input repeats the model's own output items (calls, reasoning,
        # preamble) before the results: a result must follow the call it answers.
        conversation.extend(reply.body["output"])
        batch = verdict.calls
        ids = [call["call_id"] for call in batch]
        if len(set(ids)) != len(ids) or seen_ids.intersection(ids):
            return finish(DUPLICATE_CALL_ID)
        # The whole batch fits, or none of it runs: half a batch would leave calls
        # the model asked for with no result, and work done that nobody asked to keep.
        if calls + len(batch) > max_calls:
            return finish(BUDGET_EXHAUSTED)
        for call in batch:
            seen_ids.add(call["call_id"])
            calls += 1
            result = execute_call(call, principal)
            if result.denied:
                return finish(result.denied, denial=result.payload)
            receipts.append(result.payload)
            item = function_call_output(call["call_id"], result.payload)
            results.append(item)
            conversation.append(item)
            step.executed.append(call["call_id"])
    return finish(TURN_LIMIT)


def _parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None
    # course: end run_loop
