"""The fake model's verdicts on request bodies, kept between runs: they may save time, never change an answer.

White-box tests of the fake model's private modules (its contract's memo, the fast check beside the full
schema): this folder is the one place outside course/fake_model/ that may import them (the architecture
test holds the house to that); every other test of the fake model uses its public face.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from course import cache
from course.fake_model import _contract as contract
from course.fake_model._errors import APIError
from test_fake_model_api import BAD_REQUESTS, GOOD_REQUESTS

REPO = Path(__file__).resolve().parents[3]
CHAT = "CreateChatCompletionRequest"
RESPONSES = "CreateResponseRequest"


def _forget() -> None:
    """What this process learned from the contract: the next lookups start as a new worker would."""
    for cached in (contract.source, contract.document, contract.validator, contract._fast_validator,
                   contract._schema, contract._verdicts):
        cached.cache_clear()


@pytest.fixture
def kept(tmp_path, monkeypatch):  # noqa: ANN001, ANN201
    """A cache folder of the test's own; yields the folder the verdicts go to."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _forget()
    yield tmp_path / "cache" / "course" / "verdicts"
    _forget()


def bodies() -> list[bytes]:
    """Valid and invalid request bodies: the contract tests' tables and damaged copies of them (seeded)."""
    found = [json.dumps(b).encode() for b, *_ in BAD_REQUESTS.values()]
    found += [json.dumps(b).encode() for b in GOOD_REQUESTS.values()]
    rng = random.Random(11)
    junk = [None, 0, -1, 2.5, "", "x", [], {}, {"role": "user"}, True]
    for raw in list(found):
        for _ in range(6):
            copy = node = json.loads(raw)
            while isinstance(node, (dict, list)) and node:
                key = rng.choice(list(node) if isinstance(node, dict) else range(len(node)))
                if not isinstance(node[key], (dict, list)) or rng.random() < 0.3:
                    node[key] = rng.choice(junk)
                    break
                node = node[key]
            found.append(json.dumps(copy).encode())
    return list(dict.fromkeys(found))


def answer(schema: str, raw: bytes) -> tuple:
    """What request_body says of these bytes: the body, or every field of the error."""
    try:
        return ("valid", contract.request_body(schema, raw))
    except APIError as error:
        return ("refused", error.status, error.message, error.type, error.param, error.code, error.headers)


def truth(schema: str, raw: bytes) -> tuple:
    """The same, by validating (nothing kept is consulted)."""
    body = json.loads(raw)
    try:
        contract.check_request(schema, body)
    except APIError as error:
        return ("refused", error.status, error.message, error.type, error.param, error.code, error.headers)
    return ("valid", body)


def test_answers_are_the_same_cold_and_warm_and_warm_validates_nothing(kept, monkeypatch):  # noqa: ANN001
    cases = [(schema, raw) for raw in bodies() for schema in (CHAT, RESPONSES)]
    expected = [truth(schema, raw) for schema, raw in cases]
    assert {e[0] for e in expected} == {"valid", "refused"}  # both kinds of verdict are kept
    _forget()
    assert [answer(schema, raw) for schema, raw in cases] == expected  # cold: each validated, then kept
    assert len(list(kept.iterdir())) == 1
    _forget()  # a new process: what it knows comes from the file

    def validate(*args):  # noqa: ANN002, ANN202
        raise AssertionError("a kept verdict was validated again")

    monkeypatch.setattr(contract, "check_request", validate)
    assert [answer(schema, raw) for schema, raw in cases] == expected


def test_a_warm_process_never_imports_jsonschema_or_yaml(kept, tmp_path):  # noqa: ANN001
    """Two fresh interpreters judge the same bodies: the second answers the same from the kept verdicts,
    without importing jsonschema or yaml."""
    program = (
        "import json, sys\n"
        "from course.fake_model import _contract as contract\n"
        "from course.fake_model._errors import APIError\n"
        "out = []\n"
        "for raw in json.load(sys.stdin):\n"
        "    try:\n"
        "        out.append(contract.request_body('CreateChatCompletionRequest', raw.encode()))\n"
        "    except APIError as e:\n"
        "        out.append([e.status, e.message, e.type, e.param, e.code])\n"
        "print(json.dumps([out, 'jsonschema' in sys.modules, 'yaml' in sys.modules]))\n"
    )
    sent = json.dumps([raw.decode() for raw in bodies()[:40]])
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def run() -> list:
        done = subprocess.run([sys.executable, "-c", program], input=sent, capture_output=True, text=True, env=env,
                              cwd=tmp_path, timeout=120, check=True)
        return json.loads(done.stdout)

    cold, warm = run(), run()
    assert cold[1] is True, "the first run validates"
    assert warm == [cold[0], False, False]


def test_a_changed_contract_is_judged_afresh(kept, tmp_path, monkeypatch):  # noqa: ANN001
    hot = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 2.5}).encode()
    assert answer(CHAT, hot)[:2] == ("refused", 400)
    changed = tmp_path / "contract.yaml"
    text = contract.contract_path().read_text(encoding="utf-8")
    limit = "temperature: { type: [number, \"null\"], minimum: 0, maximum: 2 }"
    assert text.count(limit) == 2
    changed.write_text(text.replace(limit, limit.replace("maximum: 2", "maximum: 3")), encoding="utf-8")
    monkeypatch.setattr(contract, "contract_path", lambda: changed)
    _forget()
    assert answer(CHAT, hot)[0] == "valid"
    assert len(list(kept.iterdir())) == 2  # one file of verdicts per version of the contract


def test_changed_code_or_jsonschema_starts_afresh(kept, tmp_path, monkeypatch):  # noqa: ANN001
    """A verdict is the contract's, worded by this harness's code, found by the installed jsonschema:
    a change to either starts a new file of verdicts (an improved wording is never hidden by an old one)."""
    import importlib.util
    import shutil
    from types import SimpleNamespace

    raw = json.dumps(BAD_REQUESTS["unknown role"][0]).encode()
    expected = truth(CHAT, raw)
    assert answer(CHAT, raw) == expected
    first = contract._judge()
    code = tmp_path / "code"
    code.mkdir()
    for name in ("_contract.py", "_errors.py"):
        shutil.copy(Path(contract.__file__).with_name(name), code / name)
    (code / "_contract.py").write_text((code / "_contract.py").read_text() + "\n# reworded\n")
    original = contract.__file__
    monkeypatch.setattr(contract, "__file__", str(code / "_contract.py"))
    _forget()
    assert contract._judge() != first and answer(CHAT, raw) == expected
    assert len(list(kept.iterdir())) == 2
    monkeypatch.setattr(contract, "__file__", original)
    assert contract._judge() == first
    other = tmp_path / "jsonschema" / "__init__.py"
    other.parent.mkdir()
    other.write_text("")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: SimpleNamespace(origin=str(other)))
    assert contract._judge() != first


def test_a_damaged_file_of_verdicts_is_a_miss_and_is_repaired(kept):  # noqa: ANN001
    cases = [(CHAT, raw) for raw in bodies()[:60]]
    expected = [truth(schema, raw) for schema, raw in cases]
    _forget()
    assert [answer(schema, raw) for schema, raw in cases] == expected
    (memo,) = kept.iterdir()
    lines = memo.read_bytes().splitlines(keepends=True)
    key, _ = json.loads(lines[0])
    damaged = [b"\xff\xfe not json\n", lines[1][: len(lines[1]) // 2] + b"\n",  # garbage and a torn line
               json.dumps([key, {"status": "400"}]).encode() + b"\n",  # not a verdict's shape
               json.dumps([7, "valid"]).encode() + b"\n", b"[]\n"]
    memo.write_bytes(b"".join(damaged) + b"".join(lines[2:]))
    _forget()
    assert [answer(schema, raw) for schema, raw in cases] == expected
    lines = memo.read_bytes().splitlines()  # the load wrote it again without the unreadable lines
    assert all(isinstance(json.loads(line)[0], str) for line in lines)
    fresh = cache.Memo(memo, limit=contract.VERDICTS_KEPT)
    assert fresh.get(key) != {"status": "400"}  # the verdict found again replaced the one not trusted
    assert all(value == contract.VALID or contract._error_from(value) is not None for value in fresh.answers.values())
    memo.write_bytes(os.urandom(3000))
    _forget()
    assert [answer(schema, raw) for schema, raw in cases] == expected


def test_an_unwritable_cache_only_costs_time(tmp_path, monkeypatch):  # noqa: ANN001
    (tmp_path / "cache").write_text("a file where the cache folder would go", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _forget()
    try:
        cases = [(CHAT, raw) for raw in bodies()[:20]]
        assert [answer(schema, raw) for schema, raw in cases] == [truth(schema, raw) for schema, raw in cases]
        assert [answer(schema, raw) for schema, raw in cases] == [truth(schema, raw) for schema, raw in cases]
    finally:
        _forget()


# ---- the memo itself ----------------------------------------------------------------------------------------------


def _value(key: str) -> dict:
    return {"key": key, "pad": key * 500}  # long lines: a reader meets one half written more often


def _append(path: Path, writer: int) -> None:
    for i in range(200):
        if i % 10 == 0:  # a new process would start here, reading what the others are appending
            memo = cache.Memo(path, limit=10_000)
        memo.put(f"{writer}-{i}", _value(f"{writer}-{i}"))


def test_writers_at_once_lose_nothing(tmp_path):  # noqa: ANN001
    """Several processes append to one file at once while they load it again and again: nothing is
    lost, every line read back is whole and holds the answer written for its key (a line still being
    written when a memo loads is not mistaken for damage, which would make it write the file again)."""
    import multiprocessing

    path = tmp_path / "memo.jsonl"
    writers = [multiprocessing.get_context("fork").Process(target=_append, args=(path, w)) for w in range(4)]
    for w in writers:
        w.start()
    for w in writers:
        w.join(120)
        assert w.exitcode == 0
    lines = path.read_bytes().splitlines()
    assert len(lines) == 4 * 200 and all(json.loads(line)[1] == _value(json.loads(line)[0]) for line in lines)
    assert cache.Memo(path, limit=10_000).get("3-199") == _value("3-199")


def test_a_memo_stays_within_its_bounds(tmp_path):  # noqa: ANN001
    path = tmp_path / "memo.jsonl"
    memo = cache.Memo(path, limit=5)
    for i in range(12):
        memo.put(f"k{i}", i)
    assert memo.get("k0") is None and memo.get("k11") == 11  # in memory too
    fresh = cache.Memo(path, limit=5)
    assert [fresh.get(f"k{i}") for i in range(12)] == [None] * 7 + list(range(7, 12))
    assert len(path.read_bytes().splitlines()) == 5  # written again, newest last
    for name in ("a", "b", "c"):
        cache.Memo(tmp_path / f"{name}.jsonl", limit=5, files=3).put("x", 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "b.jsonl", "c.jsonl"]  # memo.jsonl, the oldest, went


def test_fast_check_agrees_with_the_full_schema():
    """Valid requests are checked by discriminator alone (one branch per message): it must say exactly what
    the full schema says, on every request of these tables and on damaged copies of them."""
    fast, full = contract._fast_validator("CreateChatCompletionRequest"), contract.validator("CreateChatCompletionRequest")
    bodies = [b for b, *_ in BAD_REQUESTS.values()] + list(GOOD_REQUESTS.values())
    rng = random.Random(8)
    junk = [None, 0, 1.5, "", "x", [], {}, {"role": "user"}, {"role": "nobody", "content": "x"}, True]
    for body in list(bodies):
        for _ in range(30):
            copy = json.loads(json.dumps(body))
            node = copy
            while isinstance(node, (dict, list)) and node and rng.random() < 0.7:
                key = rng.choice(list(node) if isinstance(node, dict) else range(len(node)))
                if not isinstance(node[key], (dict, list)) or rng.random() < 0.3:
                    node[key] = rng.choice(junk)
                    break
                node = node[key]
            bodies.append(copy)
    for body in bodies:
        assert fast.is_valid(body) == full.is_valid(body), body
