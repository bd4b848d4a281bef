"""Offline failure laboratory of chapter ag02 (`course run ag02 [--scenario NAME]`), and an opt-in live run.

Offline, the code under test (the learner's agent/, or the reference) meets authored event streams
from fixtures/ag02/scenarios.json: no network, no key, no cost. A failure scenario exits 0 only when
its expected failure was observed with zero tool executions; the happy path exits 0 when the
conversation ends with the expected answer. `--live --model M` talks to OPENAI_BASE_URL (default
https://api.openai.com/v1) with OPENAI_API_KEY through the given transport; it is never run by tests.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent))  # appended: never shadows the code under test

import ag02_samples as samples  # noqa: E402
from agent.responses import provider, transport  # noqa: E402
from agent.responses.types import Message, OpenFailure, ResponseFailure, ToolCall  # noqa: E402

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEVELOPER = ("You fix small bugs in a Python project. Use read to look at a file and edit to change it; "
             "make the smallest edit that fixes the bug, then say in one sentence what you changed.")


class Console:
    """The report observer: text as it streams, argument progress and retries on their own lines."""

    def __init__(self) -> None:
        self.mid_line = False

    def __call__(self, kind: str, detail: str) -> None:
        if kind in ("text", "refusal"):
            if not self.mid_line:
                print(f"   {'model' if kind == 'text' else 'refusal'}> ", end="")
            print(detail, end="", flush=True)
            self.mid_line = True
            return
        self.end_line()
        print(f"   · {kind}: {detail}")

    def end_line(self) -> None:
        if self.mid_line:
            print()
            self.mid_line = False


def _opening(entry: dict) -> object:
    return samples.opening(entry)


async def _offline(name: str, spec: dict, files: dict[str, str], question: str) -> int:
    script = samples.Script(*[_opening(entry) for turn in spec["turns"] for entry in turn])
    console = Console()
    waits: list[float] = []

    async def no_wait(seconds: float) -> None:  # the attempt sequence is kept, the wall-clock wait skipped
        waits.append(seconds)

    adapter = provider.ResponsesProvider(script, samples.MODEL, report=console, sleep=no_wait)
    workspace = samples.Workspace(files)

    def execute(call: ToolCall) -> str:
        console.end_line()
        result = workspace.execute(call)
        print(f"   ran {call.name}({', '.join(f'{k}={v!r}' for k, v in call.arguments.items())}) -> {result.splitlines()[0] if result else ''}")
        return result

    history = [Message("developer", DEVELOPER), Message("user", question)]
    print(f"\n== {name}: {spec['about']}")
    failure: BaseException | None = None
    answer: Message | None = None
    try:
        answer = await samples.run_loop(adapter.complete, history, samples.tools(), execute)
    except (ResponseFailure, OpenFailure, ConnectionError, samples.ScriptExhausted) as exc:
        failure = exc
    console.end_line()
    expect = spec["expect"]
    seen = {"requests": len(script.requests), "executions": len(workspace.executed), "waits": len(waits)}
    print(f"   requests {seen['requests']}, waits {seen['waits']} (skipped: {', '.join(f'{w:.2f} s' for w in waits) or 'none'}), "
          f"tool executions {seen['executions']}")
    problems = []
    if "failure" in expect:
        got = samples.failure_code(failure) if failure else None
        print(f"   outcome: {'failure ' + got + ' (' + str(failure) + ')' if failure else 'a final answer: ' + repr(answer.content if answer else '')}")
        if got != expect["failure"]:
            problems.append(f"expected failure {expect['failure']!r}, got {('failure ' + repr(got)) if got else 'success'}")
    else:
        print(f"   outcome: {'a final answer: ' + repr(answer.content) if answer else 'failure ' + samples.failure_code(failure) + f' ({failure})'}")
        if answer is None or answer.content != expect["answer"]:
            problems.append(f"expected the answer {expect['answer']!r}")
        else:
            print("   calculator.py now reads:\n" + "".join(f"     | {line}\n" for line in workspace.files["calculator.py"].splitlines()))
    for key in ("requests", "executions"):
        if seen[key] != expect[key]:
            problems.append(f"expected {expect[key]} {key[:-1] if expect[key] == 1 else key}, got {seen[key]}")
    unclosed = [s for s in script.streams if s.closed != 1]
    if unclosed:
        problems.append(f"{len(unclosed)} acquired stream(s) not closed exactly once")
    if problems:
        print("   DEMONSTRATION FAILED: " + "; ".join(problems))
        return 1
    if "failure" in expect:
        print(f"   as expected: {expect['failure']}, and no tool ran. (The demonstration passed; nothing was fixed.)")
    return 0


async def _live(model: str, allow_edit: bool, files: dict[str, str], question: str) -> int:
    key = os.environ.get("OPENAI_API_KEY", "")
    base_url = os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    if not key:
        print("course run ag02 --live: set OPENAI_API_KEY (and OPENAI_BASE_URL for another endpoint) first.", file=sys.stderr)
        return 2
    print(f"live: {base_url} with model {model}; this may incur charges. Tools work on an in-memory calculator.py.")
    console = Console()
    adapter = provider.ResponsesProvider(transport.HTTPTransport(base_url, key), model, report=console)
    workspace = samples.Workspace(files)

    def execute(call: ToolCall) -> str:
        console.end_line()
        if call.name == "edit" and not allow_edit:
            result = "error: edits are refused in this run (pass --allow-edit to permit them)"
        else:
            result = workspace.execute(call)
        print(f"   ran {call.name} -> {result.splitlines()[0] if result else ''}")
        return result

    history = [Message("developer", DEVELOPER), Message("user", question)]
    try:
        answer = await samples.run_loop(adapter.complete, history, samples.tools(), execute)
    except (ResponseFailure, OpenFailure, ConnectionError, samples.TurnBudgetExhausted) as exc:
        console.end_line()
        print(f"   stopped: {type(exc).__name__}: {exc}")
        return 1
    console.end_line()
    print(f"   final answer: {answer.content or answer.refusal!r}")
    print("   calculator.py now reads:\n" + "".join(f"     | {line}\n" for line in workspace.files["calculator.py"].splitlines()))
    return 0


def main(argv: list[str]) -> int:
    data = samples.scenarios()
    parser = argparse.ArgumentParser(prog="course run ag02", description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", choices=[n for n in data["scenarios"] if n != "happy"],
                        help="run one failure on purpose; without it, the happy path")
    parser.add_argument("--live", action="store_true", help="talk to a real endpoint (OPENAI_API_KEY, OPENAI_BASE_URL)")
    parser.add_argument("--model", help="the model, with --live")
    parser.add_argument("--allow-edit", action="store_true", help="with --live, let the model's edits apply")
    args = parser.parse_args(argv)
    if args.live and (args.scenario or not args.model):
        parser.error("--live needs --model and takes no --scenario")
    if not args.live and (args.model or args.allow_edit):
        parser.error("--model and --allow-edit go with --live")
    if args.live:
        return asyncio.run(_live(args.model, args.allow_edit, data["files"], data["question"]))
    print("ag02 offline laboratory: authored event streams (fixtures/ag02), no network, no API key.")
    print(f"code under test: {Path(provider.__file__).resolve().parents[2]}")
    name = args.scenario or "happy"
    return asyncio.run(_offline(name, data["scenarios"][name], data["files"], data["question"]))


if __name__ == "__main__":
    # code of yours that raises (a stub not written yet) is one line from `course run`, not a traceback
    raise SystemExit(main(sys.argv[1:]))
