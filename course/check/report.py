"""How a check's verdict is shown: readable lines on a terminal, results.json, JUnit XML."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import click

from course.check.coverage import describe_gaps
from course.results import ERROR, FAIL, PASS, SKIP, TIMEOUT, CheckResult, EntryResult

if TYPE_CHECKING:  # imported by junit_xml: only --junit-xml needs it
    import xml.etree.ElementTree as ET

_LABEL = {PASS: ("PASS", "green"), FAIL: ("FAIL", "red"), ERROR: ("ERROR", "red"),
          TIMEOUT: ("TIMEOUT", "yellow"), SKIP: ("SKIP", "blue")}
MAX_CASES_SHOWN = 3
# A failure reason on the terminal: at most this many lines of at most this many characters; -v shows all.
MAX_REASON_LINES = 8
REASON_WIDTH = 110
_PAD = " " * 10
# An entry of the manifest's catalog that no test file defines: the course's fault, never the learner's.
MISSING_REASON = "the catalog names {test} but no test file defines it (a fault of the course, not of your code)"
# The catalogs' assert messages say "<what>: got <value>, want <value> (<why>)".
_GOT_WANT = re.compile(r"^(?P<head>.*?)\bgot (?P<got>.+?), want (?P<want>.+)$")


def summary_line(result: CheckResult) -> str:
    """The closing line, in the plain form CI runners read: 'N passed, N failed[, N skipped]'."""
    line = f"{result.passed} passed, {result.total - result.passed} failed"
    return line + (f", {len(result.not_run)} skipped" if result.not_run else "")


def reason_width() -> int:
    """Characters a reason line may take: REASON_WIDTH, less on a narrower terminal (the lines are
    indented, and a wrapped line is harder to read than a shortened one)."""
    import shutil

    return max(50, min(REASON_WIDTH, shutil.get_terminal_size((REASON_WIDTH + 12, 24)).columns - len(_PAD) - 2))


def shorten(text: str, width: int = REASON_WIDTH) -> str:
    """One line cut in the middle, so both its start and its end stay readable."""
    if len(text) <= width:
        return text
    keep = width - 5
    return f"{text[: keep - keep // 3]} ... {text[len(text) - keep // 3 :]}"


def _around(text: str, start: int, width: int) -> str:
    cut = ("..." if start else "") + text[start:]
    return cut if len(cut) <= width else cut[: width - 3] + "..."


def got_and_want(line: str, width: int = REASON_WIDTH) -> list[str] | None:
    """A long 'got X, want Y' line as aligned lines, both values cut around their first difference."""
    match = _GOT_WANT.match(line)
    if not match or len(line) <= 80:
        return None
    head, got, want = match["head"].rstrip(), match["got"], match["want"]
    label, _, rest = got.partition(" ")
    if rest and label.isalpha() and label.islower() and not want.startswith(label):
        head, got = f"{head} {label}".strip(), rest  # "got deltas [...]": the label belongs to both
    room = width - 8
    differ = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    start = 0 if max(len(got), len(want)) <= room else max(0, differ - room // 3)
    lines = [shorten(head, width)] if head else []
    return lines + [f"  got:  {_around(got, start, room)}", f"  want: {_around(want, start, room)}"]


def bounded(message: str, *, max_lines: int = MAX_REASON_LINES, width: int | None = None) -> list[str]:
    """A failure reason in a few short lines; the tail says that -v shows the rest."""
    width = width or reason_width()
    out: list[str] = []
    for line in message.splitlines():
        out.extend(got_and_want(line, width) or [shorten(line, width)])
    if len(out) > max_lines:
        out = out[: max_lines - 1] + [f"... ({len(out) - max_lines + 1} more lines; -v shows the full text)"]
    return out


class TerminalReport:
    """Entries as they complete. While nothing has passed, they are held back: when everything
    fails (fresh stubs), a summary and the first failure say where to start, not a wall of FAILs."""

    def __init__(self, echo: Callable[..., None], *, verbose: bool = False) -> None:
        self.echo = echo
        self.verbose = verbose
        self.shown: set[str] = set()  # the entries already printed or held
        self.held: list[EntryResult] = []
        self.passing = False

    def entry(self, result: EntryResult) -> None:
        self.shown.add(result.test_name)
        if not self.verbose and not self.passing:
            if result.status != PASS:
                self.held.append(result)
                return
            self.passing = True
            self.release()
        self.show(result)

    def release(self) -> None:
        held, self.held = self.held, []
        for result in held:
            self.show(result)

    def show(self, result: EntryResult) -> None:
        label, colour = _LABEL[result.status]
        line = f"  {click.style(label.ljust(7), fg=colour, bold=True)} {result.test_name}"
        failures = result.failures
        if failures and len(result.cases) > 1:
            line += click.style(f"  ({len(failures)} of {len(result.cases)} cases)", dim=True)
        self.echo(line)
        if result.missing:
            self.echo(f"{_PAD}{MISSING_REASON.format(test=result.test_name)}")
        # Cases failing the same way are shown once: fifteen copies of one message help nobody.
        groups: dict[tuple[str, str], list] = {}
        for case in failures:
            groups.setdefault((case.message, case.where), []).append(case)
        shown = list(groups.values()) if self.verbose else list(groups.values())[:MAX_CASES_SHOWN]
        for cases in shown:
            self._case(cases)
        if len(groups) > len(shown):
            hidden = sum(len(c) for c in list(groups.values())[len(shown):])
            plural = "s" if hidden != 1 else ""
            self.echo(click.style(f"{_PAD}... and {hidden} more failing case{plural} (-v shows them all)", dim=True))
        skipped = result.not_run
        if skipped:
            plural = "s" if len(skipped) != 1 else ""
            self.echo(click.style(f"{_PAD}{len(skipped)} more case{plural} {skipped[0].message}", dim=True))

    def _case(self, cases: list) -> None:
        case = cases[0]
        named = [c.case for c in cases if c.case]
        head = ""
        if len(named) == 1:
            head = f"case {named[0]}: "
        elif named:
            shown = ", ".join(named[:4]) + (f" and {len(named) - 4} more" if len(named) > 4 else "")
            head = f"cases {shown}: "
        if self.verbose:
            lines = (head + (case.details or case.message)).splitlines()
        elif len(head) + len(case.message.splitlines()[0] if case.message else "") > reason_width():
            lines = [shorten(head.rstrip(": ") + ":", reason_width())] + bounded(case.message)  # cases, then reason
        else:
            lines = bounded(head + case.message)
        for line in lines or [case.status]:
            self.echo(_PAD + line)
        places = [p for p in (case.where and f"in your code at {case.where}", case.test_line and f"test at {case.test_line}") if p]
        if places:
            self.echo(click.style(_PAD + "(" + "; ".join(places) + ")", dim=True))
        printed = case.output.rstrip("\n")
        if printed and self.verbose:
            self.echo(_PAD + "captured output:")
            self.echo(textwrap.indent(printed, _PAD + "  "))
        elif printed:
            count = len(printed.splitlines())
            self.echo(click.style(f"{_PAD}captured output: {count} line{'s' if count != 1 else ''} (-v shows it)", dim=True))

    def problem(self, problem: str, *, blocked: bool = True) -> None:
        self.release()
        self.echo(click.style("  the catalog could not run:" if blocked else "  the check was stopped:", fg="red", bold=True))
        self.echo(textwrap.indent(problem, "    "))
        if blocked:
            self.echo("  the tests it kept from running are marked error until this is fixed.")

    def finish(self, result: CheckResult) -> None:
        """Show what was held back: a summary when every test failed, else every entry."""
        if not self.held:
            return
        if len(self.held) > 1 and len(self.held) == result.total and not result.problem:
            first = self.held[0]
            where = f" ({first.entry.section_label})" if first.entry.section_label else ""
            self.echo(click.style(f"0 of {result.total} passing: start with {first.test_name}{where}", bold=True))
            self.show(first)
            self.echo(click.style(f"  ... and {result.total - 1} more failing tests (-v lists them all; "
                                  f"`course hint` gives a hint for {first.test_name})", dim=True))
            self.held = []
            return
        self.release()

    def coverage(self, result: CheckResult, files: list[str], *, select: str = "", whose: str = "your") -> None:
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
            self.echo(f"coverage: {scope} ran every line and branch of {whose} files")
            return
        self.echo(f"coverage: lines of {whose} files that {scope} never ran (unneeded, or not yet proven by a test)")
        for name, described in gaps:
            self.echo(f"  {name}: {described}")

    def closing(self, result: CheckResult) -> None:
        self.finish(result)
        for entry in result.entries:  # never reported by the run: no case of theirs ever ran
            if entry.missing and entry.test_name not in self.shown:
                self.shown.add(entry.test_name)
                self.show(entry)
        if result.stopped_first:
            self.echo(click.style(f"\nstopped at the first failure (-x): {len(result.not_run)} tests not run", fg="yellow"))
        elif result.not_run:
            self.echo(click.style(f"\nnot run: {', '.join(result.not_run)}", fg="yellow"))
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
            out["message"] = MISSING_REASON.format(test=entry.test_name)
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
    import xml.etree.ElementTree as ET

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
        message = first.message if first else (MISSING_REASON.format(test=entry.test_name) if entry.missing
                                               else result.problem or "test not run")
        node = ET.SubElement(case, tag, message=message.splitlines()[0] if message else entry.status)
        node.text = "\n\n".join(c.details or c.message for c in entry.failures) or message
    return ET.ElementTree(root)


def write_json(path: Path, doc: dict) -> None:
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def write_junit(path: Path, tree: ET.ElementTree) -> None:
    tree.write(path, encoding="utf-8", xml_declaration=True)
