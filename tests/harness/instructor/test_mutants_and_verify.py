"""Instructor commands: documented mutants, verify, the manifest's errors, and the pitfall hint, on a
copy of the synthetic chapter (the real chapters are proven by `course verify` itself)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from conftest import REPO, SYN, start_in_process, syn_reference, tree_digest


def manifest(root: Path) -> dict:
    return yaml.safe_load((root / "chapters" / SYN / "chapter.yaml").read_text())


def save_manifest(root: Path, data: dict) -> None:
    (root / "chapters" / SYN / "chapter.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def test_every_documented_mutant_is_killed_as_documented(syn, content: Path, tmp_path: Path) -> None:
    out = tmp_path / "mutants.json"
    ran = syn("mutants", SYN, "--json", str(out), cwd=tmp_path)
    assert ran.code == 0, ran.out + ran.err
    results = json.loads(out.read_text())["mutants"]
    assert [r["id"] for r in results] == ["m1", "m2"]
    assert all(r["killed_as_documented"] for r in results), results
    assert results[0]["failing"] == ["add", "add_cases"], results[0]


def test_removing_the_assertion_that_catches_a_mutant_fails_the_run(syn, content: Path, tmp_path: Path) -> None:
    tests = content / "tests" / "python" / SYN / "test_syn.py"
    text = tests.read_text()
    # m2 (total starts at one) is caught by the two total tests; weaken exactly their assertions
    weakened = text.replace("== recorded[\"total\"]", ">= recorded[\"total\"]").replace("== 3, ", ">= 3, ")
    assert weakened.count(">=") == 2, "the total tests' assertions were not found"
    tests.write_text(weakened)
    ran = syn("mutants", SYN, "--only", "m2", cwd=tmp_path)
    assert ran.code == 1, ran.out + ran.err
    assert re.search(r"BAD\s+m2\s+survived", ran.out), ran.out
    assert "documented as caught by: total_of_the_fixture, scratch_round_trip" in ran.out, ran.out


def test_a_stale_mutant_names_its_file_and_text(syn, content: Path, tmp_path: Path) -> None:
    data = manifest(content)
    data["tracks"]["python"]["mutants"][0]["find"] = "this text is nowhere in the file"
    save_manifest(content, data)
    ran = syn("mutants", SYN, "--only", "m1", cwd=tmp_path)
    assert ran.code == 1
    assert "stale" in ran.out and "pkg/calc.py" in ran.out and "this text is nowhere in the file" in ran.out


def test_a_malformed_manifest_is_one_error_naming_chapter_entry_and_field(syn, content: Path, tmp_path: Path) -> None:
    data = manifest(content)
    del data["catalog"][2]["kind"]
    save_manifest(content, data)
    ran = syn("tests", SYN, cwd=tmp_path)
    assert ran.code == 2
    assert ran.err.strip() == f"course: chapter {SYN}, catalog entry #3: missing field 'kind'", ran.err


def test_a_manifest_in_another_format_is_refused_with_one_line(syn, content: Path, tmp_path: Path) -> None:
    data = manifest(content)
    data["format_version"] = 2
    save_manifest(content, data)
    ran = syn("tests", SYN, cwd=tmp_path)
    assert ran.code == 2
    assert ran.err.strip() == (f"course: chapter {SYN}: its manifest is in format_version 2; "
                               "this course reads format_version 1; upgrade course"), ran.err
    del data["format_version"]
    save_manifest(content, data)
    ran = syn("tests", SYN, cwd=tmp_path)
    assert ran.code == 2 and "has no format_version" in ran.err, ran.err


def test_an_interrupted_run_leaves_the_reference_byte_identical(content: Path, tmp_path: Path) -> None:
    # a slow mutant keeps the run busy until the interrupt comes
    data = manifest(content)
    data["tracks"]["python"]["mutants"].append({
        "id": "m3", "pitfall": 2, "description": "total sleeps", "file": "pkg/calc.py",
        "find": "    result = 0\n", "replace": "    import time\n    time.sleep(30)\n    result = 0\n",
        "caught_by": ["total_of_the_fixture"]})
    save_manifest(content, data)
    reference = content / "reference"
    before = tree_digest(reference)
    private = tmp_path / "tmp"  # its own temporary folder: other runs on the machine use /tmp too
    private.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1", "TMPDIR": str(private),
           "COURSE_CONTENT": str(content)}
    process = subprocess.Popen([sys.executable, "-m", "course", "mutants", SYN, "--jobs", "3"], cwd=tmp_path,
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = process.stderr.readline()  # a first mutant is judged, the slow one is in flight
    assert re.match(r"\s+m\d+: ", first), first
    time.sleep(0.2)  # give the slow mutant's worker time to start: the interrupt must stop it
    process.send_signal(signal.SIGINT)  # what Ctrl-C sends
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, out + err
    assert "Traceback" not in err, err
    assert tree_digest(reference) == before, "the reference changed"
    leftovers = list(private.iterdir())
    assert not leftovers, f"temporary copies left behind: {leftovers}"


def test_verify_fails_when_a_catalog_test_passes_on_the_stubs(syn, content: Path, tmp_path: Path) -> None:
    tests = content / "tests" / "python" / SYN / "test_syn.py"
    tests.write_text(tests.read_text() + "\n\ndef test_always_passes() -> None:\n    assert True, 'always'\n")
    data = manifest(content)
    data["catalog"].append({"name": "always_passes", "kind": "unit", "checks": "nothing", "why": "none",
                            "stated_in": [{"section": "Rules"}], "hints": ["a", "b", "c"]})
    data["tracks"]["python"]["mutants"] = []
    save_manifest(content, data)
    ran = syn("verify", SYN, cwd=tmp_path)
    assert ran.code == 1
    assert "test_always_passes" in ran.out and "check nothing" in ran.out, ran.out


def test_verify_flags_an_assert_without_a_message(syn, content: Path, tmp_path: Path) -> None:
    tests = content / "tests" / "python" / SYN / "test_syn.py"
    lines = tests.read_text().splitlines()
    tests.write_text("\n".join(lines) + "\n\n\ndef helper_without_message():\n    assert 1 + 1 == 2\n")
    ran = syn("verify", SYN, cwd=tmp_path)
    assert ran.code == 1
    assert f"test_syn.py:{len(lines) + 4}: assert without a message" in ran.out, ran.out


def test_verify_fails_when_stubs_are_out_of_step_with_the_reference(syn, content: Path, tmp_path: Path) -> None:
    reference = content / "reference" / "python" / SYN / "pkg" / "calc.py"
    # a new learner region with no guidance in the starter
    reference.write_text(reference.read_text().replace(
        '    """The sum of a and b."""\n', '    """The sum of a and b."""\n    # course: begin check\n    # course: end check\n'))
    ran = syn("verify", SYN, cwd=tmp_path)
    assert ran.code == 1
    assert "region 'check' has no block in the starter" in ran.out, ran.out
    # guidance for a region the reference no longer has
    reference.write_text(reference.read_text().replace("    # course: begin check\n    # course: end check\n", ""))
    starter = content / "starter" / "python" / SYN / "pkg" / "calc.py"
    starter.write_text(starter.read_text() + "{% block gone %}\n    pass\n{% endblock %}\n")
    ran = syn("verify", SYN, cwd=tmp_path)
    assert ran.code == 1 and "block 'gone' matches no region of the reference" in ran.out, ran.out
    # a stub that does not load
    starter.write_text(starter.read_text().replace("{% block gone %}\n    pass\n{% endblock %}\n", "")
                       .replace('NotImplementedError("total: start at zero, add each number")', 'NotImplementedError("total"'))
    ran = syn("verify", SYN, cwd=tmp_path)
    assert ran.code == 1 and "the stubs do not even load" in ran.out and "syntax error" in ran.out, ran.out


def test_one_documented_bug_gets_its_place_and_pitfall_named(syn, content: Path, learner: Path) -> None:
    from course.chapters import load_folder
    from course.mutant import apply

    chapter = load_folder(content / "chapters" / SYN)
    track = chapter.track("python")
    assert chapter.signatures_path.is_file(), "the synthetic chapter records its kill signatures"
    start_in_process(content, learner)
    syn_reference(content, learner)
    mutant = next(m for m in track.mutants if m.id == "m1")  # nine broken cases: enough to name a pitfall
    apply(mutant, learner)
    ran = syn("check", cwd=learner)
    assert ran.code == 1
    pitfall = chapter.pitfall(mutant.pitfall)
    line = next(n for n, text in enumerate((learner / "pkg" / "calc.py").read_text().splitlines(), 1)
                if text.startswith("def add("))
    assert f"hint: the failures come from `add` (pkg/calc.py:{line})\n" in ran.out, ran.out
    assert f"      they match pitfall {pitfall.id}: {pitfall.title} (`course show syn`, Pitfalls)" in ran.out, ran.out
    # two broken checks are where many bugs meet: the place, and no pitfall
    syn_reference(content, learner)
    apply(next(m for m in track.mutants if m.id == "m2"), learner)
    ran = syn("check", cwd=learner)
    assert "hint: the failures come from `total`" in ran.out and "pitfall" not in ran.out.split("hint:")[1], ran.out

def test_a_documented_bug_of_no_pitfall_is_run_listed_and_accepted(syn, content: Path, tmp_path: Path) -> None:
    data = manifest(content)
    data["tracks"]["python"]["mutants"][1]["pitfall"] = None  # m2: a bug that matches none of the pitfalls
    save_manifest(content, data)
    ran = syn("mutants", SYN, cwd=tmp_path)
    assert ran.code == 0, ran.out + ran.err
    assert re.search(r"ok\s+m2\s+killed\s+pitfall -\s", ran.out), ran.out
    ran = syn("verify", SYN, cwd=tmp_path)
    assert "pitfall" not in ran.out.split("manifest", 1)[-1].split("\n", 1)[0], ran.out
    assert "mutant m2" not in ran.out, ran.out  # neither its pitfall nor its places are held against it
    assert "signatures" in ran.out and "--record" in ran.out, "the recording is stale now, and says so"
