"""The bounded tool loop: ask, classify, execute within budget, return results, verify.

The loop ends in exactly one status. Only ``answer_ready`` means the task is
done: the model's final answer equals a receipt that a tool call produced.
"""

from __future__ import annotations

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
    """The input item that returns ``payload`` as the result of the call ``call_id``:

    ``{"type": "function_call_output", "call_id": call_id, "output": <payload as JSON text>}``,
    the JSON text made with ``json.dumps(payload, sort_keys=True)``.
    """
    raise NotImplementedError("function_call_output: wrap a result for the call it answers")


def run_loop(
    request: dict[str, Any],
    send: Send,
    principal: Principal = TRUSTED_PRINCIPAL,
    *,
    max_turns: int = MAX_TURNS,
    max_calls: int = MAX_CALLS,
) -> Outcome:
    """Drive ``request`` to one final status, calling ``send`` at most ``max_turns`` times.

    Keep a conversation, starting as a copy of ``request["input"]`` (never change the caller's
    request). Everything else a run remembers (receipts, call_ids seen, counts) belongs to this
    run alone: a second run starts from nothing. Each turn (numbered from 1):

    1. ``reply = send({**request, "input": <a new list copied from the conversation>})``: a
       ``send`` may keep the body it was given, so a body once sent must never change. Then
       ``verdict = classify_response(reply.body, reply.http_status)``; append
       ``Step(turn, verdict.kind.value)`` to the steps (every turn has its step, the last
       one included, whatever its kind).
    2. ``TEXT`` (even an empty text): parse the whole text as JSON (not JSON, including JSON inside a code fence or
       beside a sentence: ``None``) and put it in ``answer``, verified or not. Status ``ANSWER_READY`` when the parsed value equals one of the receipts (the
       payloads of the calls run so far in this run), else ``UNVERIFIED_ANSWER``. Compare parsed
       values, never text: key order and spacing do not matter; a missing or extra key, or a
       value in another case, does.
    3. Any other kind but ``TOOL_REQUESTS``: stop with ``verdict.kind.value`` as status (no
       retry here).
    4. ``TOOL_REQUESTS``: append every item of ``reply.body["output"]`` to the conversation,
       unchanged and in order. Then, before running anything: a ``call_id`` (compared exactly,
       case included) repeated inside the batch or already seen in an earlier turn stops with ``DUPLICATE_CALL_ID`` (checked
       first); then ``calls + len(batch) > max_calls`` stops with ``BUDGET_EXHAUSTED`` (none of
       the batch runs). Then for each call, in order: count it in ``calls``, run
       ``execute_call(call, principal)``; a denied result stops the run at once (later calls of
       the batch never run) with the denial reason as status and ``denial`` = its payload;
       otherwise keep the receipt, append ``function_call_output(call["call_id"], payload)`` to
       ``results`` and to the conversation, and the call_id to the step's ``executed``.

    ``max_calls=0`` allows no call at all; ``max_turns=0`` sends nothing. When the turns run out,
    stop with ``TURN_LIMIT``. Every ``Outcome`` carries ``calls``,
    ``results``, ``steps`` and the last ``verdict``.
    """
    raise NotImplementedError("run_loop: bounded turns, whole-batch budget, results by call_id")
