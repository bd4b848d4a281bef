"""Nothing fails in silence: a catalog entry no test defines is named with its reason, an incomplete
install says so in one line, and a stale recording fails `course verify` with the command that renews
it. Verify itself only reads the content it proves."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import SYN, tree_digest


def _rename_test(content: Path, old: str, new: str) -> None:
    catalog = content / "tests" / "python" / SYN / "test_syn.py"
    text = catalog.read_text(encoding="utf-8")
    assert f"def {old}(" in text
    catalog.write_text(text.replace(f"def {old}(", f"def {new}("), encoding="utf-8")


def test_an_entry_no_test_defines_is_named_with_its_reason(syn, content: Path, tmp_path: Path) -> None:
    _rename_test(content, "test_add", "test_add_renamed")
    for flags in ([], ["-v"]):
        ran = syn("check", SYN, "--reference", "--json", str(tmp_path / "results.json"), *flags, cwd=tmp_path)
        assert ran.code == 1, ran.out + ran.err
        assert "test_add\n" in ran.out or "test_add " in ran.out, ran.out
        assert "the catalog names test_add but no test file defines it" in ran.out, ran.out
        assert "1 failed" in ran.out, ran.out
    results = json.loads((tmp_path / "results.json").read_text())
    (entry,) = [t for t in results["tests"] if t["name"] == "test_add"]
    assert entry["status"] == "error" and "no test file defines it" in entry["message"], entry


def test_a_missing_catalog_folder_is_one_line_not_a_row_of_failures(syn, content: Path, tmp_path: Path) -> None:
    import shutil

    shutil.rmtree(content / "tests" / "python" / SYN)
    ran = syn("check", SYN, "--reference", cwd=tmp_path)
    assert ran.code == 3, ran.out + ran.err
    lines = ran.err.strip().splitlines()
    assert len(lines) == 1 and "the installed course is incomplete: it has no tests/python/syn/ folder" in lines[0], ran.err
    assert "failed" not in ran.out, ran.out


def test_verify_reads_the_content_and_never_writes_it(syn, content: Path, tmp_path: Path) -> None:
    before = tree_digest(content)
    ran = syn("verify", SYN, cwd=tmp_path)
    assert ran.code == 0, ran.out
    assert "ok   signatures" in ran.out, ran.out
    assert tree_digest(content) == before, "course verify changed the content it proves"


def test_a_stale_recording_fails_verify_with_the_command_that_renews_it(syn, content: Path, tmp_path: Path) -> None:
    catalog = content / "tests" / "python" / SYN / "test_syn.py"
    catalog.write_text(catalog.read_text(encoding="utf-8") + "\n# a catalog edited after the recording\n",
                       encoding="utf-8")
    before = tree_digest(content)
    ran = syn("verify", SYN, cwd=tmp_path)
    assert ran.code == 1, ran.out
    (line,) = [l for l in ran.out.splitlines() if "FAIL signatures" in l]
    assert "chapters/syn/signatures.json was recorded for another catalog" in line, line
    assert "`course verify syn --record` renews it" in line, line
    assert tree_digest(content) == before, "a failing verify must not mend the recording itself"

    ran = syn("verify", SYN, "--record", cwd=tmp_path)
    assert ran.code == 0 and "recorded anew in chapters/syn/signatures.json" in ran.out, ran.out
    recorded = tree_digest(content)
    ran = syn("verify", SYN, "--record", cwd=tmp_path)
    assert ran.code == 0 and "recorded signatures unchanged" in ran.out, ran.out
    assert tree_digest(content) == recorded, "recording again what reads the same must change nothing"
    assert syn("verify", SYN, cwd=tmp_path).code == 0


def test_a_recording_without_the_track_or_a_mutant_is_stale(syn, content: Path, tmp_path: Path) -> None:
    path = content / "chapters" / SYN / "signatures.json"
    data = json.loads(path.read_text())
    del data["python"]["signatures"]["m2"]
    path.write_text(json.dumps(data))
    ran = syn("verify", SYN, cwd=tmp_path)
    assert ran.code == 1 and "has no signature for m2 (python)" in ran.out, ran.out
    path.write_text("{}")
    ran = syn("verify", SYN, cwd=tmp_path)
    assert ran.code == 1 and "has no signatures recorded for the python track" in ran.out, ran.out
