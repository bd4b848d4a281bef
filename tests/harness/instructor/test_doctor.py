"""`course doctor`: one line per check, each ok or what to do; exit 1 only for what must be mended."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from conftest import SYN


def _line(out: str, what: str) -> str:
    (line,) = [l for l in out.splitlines() if l.split()[1:2] and " ".join(l.split()[1:4]).startswith(what)]
    return line


def test_a_complete_install_passes(syn, tmp_path: Path) -> None:
    ran = syn("doctor", cwd=tmp_path)
    assert ran.code == 0, ran.out + ran.err
    assert _line(ran.out, "python").split()[0] == "ok"
    assert _line(ran.out, f"content {SYN} python").split()[0] == "ok"
    assert _line(ran.out, f"hints {SYN} python").split()[0] == "ok"
    assert "nothing to mend" in ran.out


def test_missing_content_and_a_stale_recording_each_say_what_to_do(syn, content: Path, tmp_path: Path) -> None:
    (content / "starter" / "python" / SYN / "pkg" / "calc.py").unlink()
    catalog = content / "tests" / "python" / SYN / "test_syn.py"
    catalog.write_text(catalog.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    ran = syn("doctor", cwd=tmp_path)
    assert ran.code == 1, ran.out
    line = _line(ran.out, f"content {SYN} python")
    assert line.split()[0] == "FAIL" and "no starter/python/syn/pkg/calc.py" in line and "reinstall" in line, line
    line = _line(ran.out, f"hints {SYN} python")
    assert line.split()[0] == "FAIL" and "`course verify syn --record` renews it" in line, line


def test_a_missing_toolchain_warns_unless_a_started_chapter_needs_it(syn, tmp_path: Path) -> None:
    """Go missing (no `go` on PATH) is a warning with the line that installs it: the synthetic
    chapter has a Python track only, so nothing this learner needs is broken."""
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "python3").symlink_to(os.path.realpath(sys.executable))
    ran = syn("doctor", cwd=tmp_path, env={"PATH": str(bare), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert ran.code == 0, ran.out + ran.err
    line = _line(ran.out, "go")
    assert line.split()[0] == "warn" and "install Go 1.22 or newer" in line, line
