"""How a check's verdict is shown: readable lines on a terminal, results.json, JUnit XML."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Callable

import click

from course.check.coverage import describe_gaps
from course.check.results import ERROR, FAIL, PASS, SKIP, TIMEOUT, CheckResult, EntryResult

_LABEL = {PASS: ("PASS", "green"), FAIL: ("FAIL", "red"), ERROR: ("ERROR", "red"),
          TIMEOUT: ("TIMEOUT", "yellow"), SKIP: ("SKIP", "blue")}
MAX_CASES_SHOWN = 3


def summary_line(result: CheckResult) -> str:
    """The closing line, in the plain form CI runners read: 'N passed, N failed'."""
    return f"{result.passed} passed, {result.total - result.passed} failed"


class TerminalReport:
    def __init__(self, echo: Callable[..., None], *, verbose: bool = False) -> None:
        self.echo = echo
        self.verbose = verbose
        self.shown: set[str] = set()  # the entries already printed

    def entry(self, result: EntryResult) -> None:
        self.shown.add(result.test_name)
        label, colour = _LABEL[result.status]
        line = f"  {click.style(label.ljust(7), fg=colour, bold=True)} {result.test_name}"
        failures = result.failures
        if failures and len(result.cases) > 1:
            line += click.style(f"  ({len(failures)} of {len(result.cases)} cases)", dim=True)
        self.echo(line)
        if result.missing:
            self.echo(f"          the catalog names {result.test_name} but no test file defines it")
        # Cases failing the same way are shown once: fifteen copies of one message help nobody.
        groups: dict[tuple[str, str], list] = {}
        for case in failures:
            groups.setdefault((case.message, case.where), []).append(case)
        for cases in list(groups.values())[:MAX_CASES_SHOWN]:
            self._case(cases)
        if len(groups) > MAX_CASES_SHOWN:
            hidden = sum(len(c) for c in list(groups.values())[MAX_CASES_SHOWN:])
            plural = "s" if hidden != 1 else ""
            self.echo(click.style(f"          ... and {hidden} more failing case{plural} (-v shows them all)", dim=True))

    def _case(self, cases: list) -> None:
        pad = " " * 10
        case = cases[0]
        named = [c.case for c in cases if c.case]
        head = ""
        if len(named) == 1:
            head = f"case {named[0]}: "
        elif named:
            shown = ", ".join(named[:4]) + (f" and {len(named) - 4} more" if len(named) > 4 else "")
            head = f"cases {shown}: "
        message = case.details if self.verbose and case.details else case.message
        lines = (head + message).splitlines() or [case.status]
        for line in lines:
            self.echo(pad + line)
        places = [p for p in (case.where and f"in your code at {case.where}", case.test_line and f"test at {case.test_line}") if p]
        if places:
            self.echo(click.style(pad + "(" + "; ".join(places) + ")", dim=True))
        if self.verbose and case.output:
            self.echo(pad + "output:")
            self.echo(textwrap.indent(case.output.rstrip(), pad + "  "))

    def problem(self, problem: str) -> None:
        self.echo(click.style("  the catalog could not run:", fg="red", bold=True))
        self.echo(textwrap.indent(problem, "    "))
        self.echo("  the tests it kept from running are marked error until this is fixed.")

    def coverage(self, result: CheckResult, files: list[str], *, select: str = "") -> None:
        """The lines of the learner's own files that no test ran: code either unneeded or unproven."""
        self.echo("")
        measured = result.coverage or {}
        if result.problem or not measured:
            self.echo("coverage: not measured, since the catalog could not run")
            return
        gaps = [(name, describe_gaps(measured[name])) for name in files if name in measured]
        gaps += [(name, "never imported") for name in files if name not in measured]
        gaps = [(name, described) for name, described in gaps if described]
        scope = "the tests chosen with -k" if select else "the catalog"
        if not gaps:
            self.echo(f"coverage: {scope} ran every line and branch of your files")
            return
        self.echo(f"coverage: lines of your files that {scope} never ran (unneeded, or not yet proven by a test)")
        for name, described in gaps:
            self.echo(f"  {name}: {described}")

    def closing(self, result: CheckResult) -> None:
        colour = "green" if result.ok else "red"
        self.echo("")
        self.echo(click.style(summary_line(result), fg=colour, bold=True) + click.style(f"  ({result.duration:.2f} s)", dim=True))


def results_json(result: CheckResult, sources: dict[str, str], course: dict | None = None) -> dict:
    """exercism's test-runner interface, version 3: pass | fail | error, tests in catalog order, each
    with its `task_id` when the manifest gives one. `course` (chapter, language, score, ...) is kept
    under a key of its own, which exercism's readers ignore and `course grade --from-results` reads."""

    def test(entry: EntryResult) -> dict:
        status = PASS if entry.status == PASS else FAIL if entry.status == FAIL else ERROR
        failure = entry.failures[0] if entry.failures else None
        out = {"name": entry.test_name, "status": status, "test_code": sources.get(entry.test_name, "")}
        if entry.entry.task:
            out["task_id"] = entry.entry.task
        if entry.missing:
            out["message"] = "the catalog names this test but no test file defines it"
        elif failure:
            where = f" (in your code at {failure.where})" if failure.where else ""
            out["message"] = (f"case {failure.case}: " if failure.case else "") + failure.message + where
        output = "".join(c.output for c in entry.cases)
        if output:
            out["output"] = output[:500]
        return out

    doc: dict = {"version": 3, "status": "pass" if result.ok else "error" if result.problem else "fail"}
    if result.problem:
        doc["message"] = result.problem
    doc["tests"] = [test(e) for e in result.entries]
    if course:
        doc["course"] = course
    return doc


def junit_xml(result: CheckResult, suite: str) -> ET.ElementTree:
    failed = sum(e.status == FAIL for e in result.entries)
    errors = sum(e.status in (ERROR, TIMEOUT) for e in result.entries)
    root = ET.Element("testsuite", name=suite, tests=str(result.total), failures=str(failed),
                      errors=str(errors), time=f"{result.duration:.3f}")
    for entry in result.entries:
        case = ET.SubElement(root, "testcase", classname=suite, name=entry.test_name,
                             time=f"{sum(c.duration for c in entry.cases):.3f}")
        if entry.status == PASS:
            continue
        if entry.status == SKIP:
            ET.SubElement(case, "skipped")
            continue
        tag = "failure" if entry.status == FAIL else "error"
        first = entry.failures[0] if entry.failures else None
        message = first.message if first else (result.problem or "test not found")
        node = ET.SubElement(case, tag, message=message.splitlines()[0] if message else entry.status)
        node.text = "\n\n".join(c.details or c.message for c in entry.failures) or message
    return ET.ElementTree(root)


def write_json(path: Path, doc: dict) -> None:
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def write_junit(path: Path, tree: ET.ElementTree) -> None:
    tree.write(path, encoding="utf-8", xml_declaration=True)
