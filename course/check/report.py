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


def bounded(message: str, *, max_lines: int = MAX_REASON_LINES, width: int | None = None,
            whole: bool = False) -> list[str]:
    """A failure reason in a few short lines (cut in their middle), the tail saying that -v shows
    the rest; `whole`: every line, a long one wrapped rather than cut."""
    from course.diffing import visible  # only when a failure is shown

    width = width or reason_width()
    out: list[str] = []
    for line in visible(message).splitlines():  # a byte-order mark, a \r: two sides that differ look it
        if whole and not _GOT_WANT.match(line):
            out.extend(textwrap.wrap(line, width, subsequent_indent="  ", break_on_hyphens=False) or [""])
        else:
            out.extend(got_and_want(line, width) or [shorten(line, width)])
    if whole:
        return out
    if len(out) > max_lines:
        out = out[: max_lines - 1] + [f"... ({len(out) - max_lines + 1} more lines; -v shows the full text)"]
    return out


class TerminalReport:
    """A check as it goes, in one shape at every stage (fresh stubs, half done, all passing): a line
    for each test as it ends, in the catalog's order; then the first failure in full, the summary and
    the next step (`next_step`). With `verbose`, each test's failures in full as it ends instead."""

    def __init__(self, echo: Callable[..., None], *, verbose: bool = False) -> None:
        self.echo = echo
        self.verbose = verbose
        self.shown: set[str] = set()  # the entries already printed

    def entry(self, result: EntryResult) -> None:
        """A test that ended: its line (with -v, its failures in full)."""
        self.shown.add(result.test_name)
        if self.verbose:
            self.show(result)
        else:
            self.line(result)

    def line(self, result: EntryResult) -> None:
        label, colour = _LABEL[result.status]
        line = f"  {click.style(label.ljust(7), fg=colour, bold=True)} {result.test_name}"
        failures = result.failures
        if failures and len(result.cases) > 1:
            line += click.style(f"  ({len(failures)} of {len(result.cases)} cases)", dim=True)
        self.echo(line)

    def show(self, result: EntryResult, *, whole: bool = False, line: bool = True) -> None:
        """A test's line (unless not `line`) and its failures: the first cases failing each distinct
        way (every one with -v), each reason in a few lines (whole with `whole` or -v)."""
        if line:
            self.line(result)
        if result.missing:
            self.echo(f"{_PAD}{MISSING_REASON.format(test=result.test_name)}")
        # Cases failing the same way are shown once: fifteen copies of one message help nobody.
        groups: dict[tuple[str, str], list] = {}
        for case in result.failures:
            groups.setdefault((case.message, case.where), []).append(case)
        shown = list(groups.values()) if self.verbose else list(groups.values())[:MAX_CASES_SHOWN]
        for cases in shown:
            self._case(cases, whole=whole)
        if len(groups) > len(shown):
            hidden = sum(len(c) for c in list(groups.values())[len(shown):])
            plural = "s" if hidden != 1 else ""
            self.echo(click.style(f"{_PAD}... and {hidden} more failing case{plural} (-v shows them all)", dim=True))
        skipped = result.not_run
        if skipped:
            plural = "s" if len(skipped) != 1 else ""
            self.echo(click.style(f"{_PAD}{len(skipped)} more case{plural} {skipped[0].message}", dim=True))

    def _case(self, cases: list, *, whole: bool = False) -> None:
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
        elif head and len(head) + len(case.message.splitlines()[0] if case.message else "") > reason_width():
            lines = [shorten(head.rstrip(": ") + ":", reason_width())] + bounded(case.message, whole=whole)
        else:
            lines = bounded(head + case.message, whole=whole)
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
        self.echo(click.style("  the catalog could not run:" if blocked else "  the check was stopped:", fg="red", bold=True))
        self.echo(textwrap.indent(problem, "    "))
        if blocked:
            self.echo("  the tests it kept from running are marked error until this is fixed.")

    def first_failure(self, result: CheckResult) -> EntryResult | None:
        """The first failing test, in full (without -v, whose lines showed every failure already)."""
        first = next((e for e in result.entries if e.status not in (PASS, SKIP) and (e.cases or e.missing)), None)
        if first is None or self.verbose:
            return first
        where = f" ({first.entry.section_label})" if first.entry.section_label else ""
        self.echo("")
        label, colour = _LABEL[first.status]
        cases = f", {len(first.failures)} of {len(first.cases)} cases" if len(first.cases) > 1 else ""
        self.echo(click.style("the first failure: ", bold=True) + click.style(label, fg=colour, bold=True)
                  + click.style(f" {first.test_name}{where}{cases}", bold=True))
        self.show(first, whole=True, line=False)
        return first

    def next_step(self, result: CheckResult, first: EntryResult | None, chapter_id: str) -> None:
        """What to do now, in one line: which test, where the chapter states its rule, a hint."""
        if result.ok:
            return
        if result.problem and not result.not_run:
            self.echo(click.style("next: ", fg="cyan", bold=True) + "fix what stops the catalog (above), then "
                      f"`course check {chapter_id}` again")
            return
        if first is None:
            return
        section = first.entry.section_label
        number = section.removeprefix("section ")
        where = f" ({section}: `course show {chapter_id} {number}`)" if number[:1].isdigit() else \
            f" ({section})" if section else ""
        self.echo(click.style("next: ", fg="cyan", bold=True) + f"make {first.test_name} pass{where}; "
                  "`course hint` gives a hint" + ("" if self.verbose else ", `course check -v` shows every failure"))

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
        for entry in result.entries:  # never reported by the run: no case of theirs ever ran
            if entry.missing and entry.test_name not in self.shown:
                self.entry(entry)
        if result.stopped_first:
            self.echo(click.style(f"\nstopped at the first failure (-x): {len(result.not_run)} tests not run", fg="yellow"))
        elif result.not_run:
            self.echo(click.style(f"\nnot run: {', '.join(result.not_run)}", fg="yellow"))

    def summary(self, result: CheckResult) -> None:
        colour = "green" if result.ok else "red"
        self.echo("")
        self.echo(click.style(summary_line(result), fg=colour, bold=True) + click.style(f"  ({result.duration:.2f} s)", dim=True))


def results_json(result: CheckResult, sources: dict[str, str], course: dict | None = None) -> dict:
    """exercism's test-runner interface, version 3: pass | fail | error, tests in catalog order, each
    with its `task_id` (the manifest's `task`: the section of the text that states its rule) and,
    unless it passed, a message saying why. `course` (chapter, language, score, ...) is kept under a
    key of its own, which exercism's readers ignore and `course grade --from-results` reads."""

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
        elif status != PASS:
            out["message"] = not_run_reason(entry, result)
        output = "".join(c.output for c in entry.cases)
        if output:
            out["output"] = output if len(output) <= OUTPUT_KEPT else \
                output[: OUTPUT_KEPT - len(_OUTPUT_CUT)] + _OUTPUT_CUT
        return out

    doc: dict = {"version": 3, "status": "pass" if result.ok else "error" if result.problem else "fail"}
    if result.problem:
        doc["message"] = result.problem
    doc["tests"] = [test(e) for e in result.entries]
    if course:
        doc["course"] = course
    return doc


# exercism's interface keeps 500 characters of a test's output, saying so when it cuts
OUTPUT_KEPT = 500
_OUTPUT_CUT = "\n[cut to 500 characters: `course check -v` shows the rest]"


def not_run_reason(entry: EntryResult, result: CheckResult) -> str:
    """Why a test that did not pass has no failure of its own: what stopped the catalog, or the
    reason its cases were left out."""
    if result.problem:
        return result.problem
    skipped = [c for c in entry.cases if c.status == SKIP and c.message]
    return skipped[0].message if skipped else "the test did not run"


# What XML 1.0 cannot hold (most control characters, lone surrogates, two non-characters), and the
# terminal's colour sequences, which only make sense on a terminal.
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def xml_text(text: str) -> str:
    """Text JUnit XML can carry: colour sequences stripped, any other character XML cannot hold
    written out as an escape (`\\x07`)."""
    return _XML_ILLEGAL.sub(lambda m: repr(m.group())[1:-1], _ANSI.sub("", text))


def junit_xml(result: CheckResult, suite: str) -> ET.ElementTree:
    """JUnit XML: a testcase per test, its failure or error with the first failing case's message
    (and every failing case's full text), what its cases printed under system-out; well-formed
    whatever the code under test printed or raised."""
    import xml.etree.ElementTree as ET

    failed = sum(e.status == FAIL for e in result.entries)
    errors = sum(e.status in (ERROR, TIMEOUT) for e in result.entries)
    root = ET.Element("testsuite", name=xml_text(suite), tests=str(result.total), failures=str(failed),
                      errors=str(errors), time=f"{result.duration:.3f}")
    for entry in result.entries:
        case = ET.SubElement(root, "testcase", classname=xml_text(suite), name=xml_text(entry.test_name),
                             time=f"{sum(c.duration for c in entry.cases):.3f}")
        output = "".join(c.output for c in entry.cases)
        if entry.status == SKIP:
            ET.SubElement(case, "skipped")
        elif entry.status != PASS:
            tag = "failure" if entry.status == FAIL else "error"
            first = entry.failures[0] if entry.failures else None
            message = first.message if first else (MISSING_REASON.format(test=entry.test_name) if entry.missing
                                                   else not_run_reason(entry, result))
            said = xml_text(message).split("\n")[0] if message else str(entry.status)
            node = ET.SubElement(case, tag, message=said)
            node.text = xml_text("\n\n".join(c.details or c.message for c in entry.failures) or message)
        if output:
            ET.SubElement(case, "system-out").text = xml_text(output)
    return ET.ElementTree(root)


def write_json(path: Path, doc: dict) -> None:
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def write_junit(path: Path, tree: ET.ElementTree) -> None:
    tree.write(path, encoding="utf-8", xml_declaration=True)
