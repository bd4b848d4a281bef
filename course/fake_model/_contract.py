"""The contract: ``fixtures/contracts/openai-subset.v1.yaml`` loaded once, requests validated against it.

A request that breaks the schema becomes an :class:`~course.fake_model._errors.APIError` worded the way
the real API words it (``Missing required parameter: 'messages'.``, ``Invalid type for ...``,
``Unrecognized request argument supplied: ...``), with the real ``param`` and ``code``. The file also
holds the answer schemas, which the harness's tests use to check the fake model's own output, and the
conversation rules (``x-course-conversation-rules``) with their wording.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from course.fake_model._errors import APIError

if TYPE_CHECKING:  # imported where a validation runs: a check whose verdicts are all kept never needs them
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

CONTRACT_NAME = "openai-subset.v1.yaml"


def contract_path() -> Path:
    from course import content

    return content.root() / "fixtures" / "contracts" / CONTRACT_NAME


@lru_cache(maxsize=1)
def source() -> bytes:
    """The contract file's bytes, read once per process."""
    return contract_path().read_bytes()


@lru_cache(maxsize=1)
def document() -> dict[str, Any]:
    """The contract as data, parsed once per process. Parsing the YAML costs ~10 ms in every process
    that starts a fake model (each worker of a check), reading JSON a few tenths of that: it comes
    from the user's cache when the file's bytes are unchanged (see course.cache.parsed)."""
    from course import cache

    return cache.parsed("contracts", source(), _parse_yaml)


def _parse_yaml(data: bytes) -> Any:
    import yaml

    return yaml.load(data, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@lru_cache(maxsize=None)
def validator(schema_name: str) -> Draft202012Validator:
    """A validator for one schema of ``components/schemas``, its references resolved inside the contract."""
    from jsonschema import Draft202012Validator

    doc = document()
    if schema_name not in doc["components"]["schemas"]:
        raise KeyError(f"the contract has no schema {schema_name!r}")
    return Draft202012Validator(_schema(f"#/components/schemas/{schema_name}"))


@lru_cache(maxsize=None)
def _fast_validator(schema_name: str) -> Draft202012Validator:
    """The same schema with each discriminated oneOf checked by its discriminator alone: one branch
    validated instead of all of them. It only says valid or not; errors come from :func:`validator`."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(_by_discriminator(_schema(f"#/components/schemas/{schema_name}")))


def _by_discriminator(node: Any) -> Any:
    if isinstance(node, list):
        return [_by_discriminator(value) for value in node]
    if not isinstance(node, dict):
        return node
    node = {key: _by_discriminator(value) for key, value in node.items()}
    disc = node.get("discriminator")
    if disc and "oneOf" in node:
        prop, mapping = disc["propertyName"], disc["mapping"]
        node = {
            "type": "object",
            "required": [prop],
            "properties": {prop: {"enum": list(mapping)}},
            "allOf": [{"if": {"properties": {prop: {"const": value}}}, "then": _by_discriminator(_schema(target))}
                      for value, target in mapping.items()],
        }
    return node


@lru_cache(maxsize=None)
def _schema(pointer: str) -> dict[str, Any]:
    """The schema at a local pointer with every reference replaced by its target (the contract has no
    recursive references): validation then never resolves a reference, which makes it several times faster."""
    node: Any = document()
    for part in pointer.lstrip("#/").split("/"):
        node = node[part]
    return _inline(node)


def _inline(node: Any) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            return _schema(node["$ref"])
        return {key: _inline(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline(value) for value in node]
    return node


def problems(schema_name: str, instance: Any) -> list[str]:
    """Every way ``instance`` breaks the schema, as readable lines (for tests of the fake's own output)."""
    return [f"{_path(e.absolute_path) or '(top)'}: {e.message}" for e in validator(schema_name).iter_errors(instance)]


# Verdicts kept. The reference's checks of every chapter send about ten distinct bodies, a learner's
# code and mutants more; every worker reads them all once (1,000 lines: about 2 ms).
VERDICTS_KEPT = 1_000


@lru_cache(maxsize=1)
def _verdicts() -> Any:
    """The verdicts on request bodies, kept between runs in the user's cache (course.cache.Memo), one
    file per version of what decides them (see :func:`_judge`: a change to any of it starts an empty
    file). Validating a body costs about half a millisecond, and the first validation in a process
    tens of milliseconds more, for importing jsonschema; clients send the same bytes run after run
    (the catalog's requests, a retry's repeat), so most checks never validate anything."""
    from course import cache

    return cache.Memo(cache.folder() / "verdicts" / f"{_judge()}.jsonl", limit=VERDICTS_KEPT)


def _judge() -> str:
    """A digest of what decides a verdict: the contract's bytes, the code that words the errors (this
    module and _errors.py) and the installed jsonschema (its file's place, size and time: an upgrade
    rewrites it), found without importing it."""
    import importlib.util
    import os

    digest = hashlib.sha256(source())
    for path in (__file__, os.path.join(os.path.dirname(__file__), "_errors.py")):
        with open(path, "rb") as code:
            digest.update(code.read())
    spec = importlib.util.find_spec("jsonschema")
    origin = spec.origin if spec and spec.origin else ""
    try:
        stat = os.stat(origin)
        digest.update(f"{origin}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    except OSError:  # no jsonschema to be found: validating will say so
        digest.update(b"no jsonschema")
    return digest.hexdigest()


def request_body(schema_name: str, raw: bytes) -> Any:
    """The request's body as JSON, checked against the schema (see :func:`parse_body` and
    :func:`check_request`). The verdict on these bytes, valid or the error the real API would answer,
    comes from the verdicts kept (:func:`_verdicts`) when they hold it: keyed by the schema and the
    digest of the bytes, since the same bytes always parse to the same body."""
    body = parse_body(raw)
    key = f"{schema_name}:{hashlib.blake2b(raw, digest_size=16).hexdigest()}"
    kept = _verdicts().get(key)
    if kept == VALID:
        return body
    refused = _error_from(kept)
    if refused is None:  # nothing kept (or nothing usable): validate, and keep the verdict
        try:
            check_request(schema_name, body)
        except APIError as error:
            _verdicts().put(key, _error_fields(error))
            raise
        _verdicts().put(key, VALID)
        return body
    raise refused


VALID = "valid"  # the verdict on a body the schema accepts; a refused one is kept as its error's fields


def _error_fields(error: APIError) -> dict[str, Any]:
    """Every field of an APIError, as JSON data (:func:`_error_from` makes it again)."""
    return {"status": error.status, "message": error.message, "type": error.type, "param": error.param,
            "code": error.code, "headers": [[name, value] for name, value in error.headers]}


def _error_from(fields: Any) -> APIError | None:
    """The APIError that fields kept by :func:`_error_fields` describe; None for anything else."""
    def text(value: Any, or_none: bool = False) -> bool:
        return isinstance(value, str) or (or_none and value is None)

    if not isinstance(fields, dict) or set(fields) != {"status", "message", "type", "param", "code", "headers"}:
        return None
    headers = fields["headers"]
    if not (type(fields["status"]) is int and text(fields["message"]) and text(fields["type"])
            and text(fields["param"], True) and text(fields["code"], True) and isinstance(headers, list)
            and all(isinstance(h, list) and len(h) == 2 and text(h[0]) and text(h[1]) for h in headers)):
        return None
    return APIError(fields["status"], fields["message"], type=fields["type"], param=fields["param"],
                    code=fields["code"], headers=tuple((name, value) for name, value in headers))


def check_request(schema_name: str, body: Any) -> None:
    """Raise the APIError the real API would answer for the first problem of this request body."""
    if _fast_validator(schema_name).is_valid(body):
        return
    v = validator(schema_name)
    errors = [precise for e in v.iter_errors(body) for precise in _refine(v, e)]
    if errors:
        first = min(errors, key=lambda e: _sort_key(e.absolute_path))
        raise _as_api_error(v, first)


def conversation_rule(rule_id: str) -> dict[str, Any]:
    """One of ``x-course-conversation-rules``: its status, message and param templates."""
    for rule in document()["x-course-conversation-rules"]:
        if rule["id"] == rule_id:
            return rule
    raise KeyError(rule_id)


# ---- from a jsonschema error to the real API's error -------------------------------------------------


def _refine(v: Draft202012Validator, error: ValidationError) -> Iterator[ValidationError]:
    """The errors that say what is wrong: a oneOf error replaced by the errors of the branch that applies."""
    from jsonschema.exceptions import ValidationError
    if error.validator != "oneOf":
        yield error
        return
    branch = _branch_for(v, error.schema, error.instance)
    if branch is None:
        yield error
        return
    if isinstance(branch, ValidationError):  # the discriminator itself is wrong
        _prefix(branch, error.absolute_path)
        yield branch
        return
    for sub in v.evolve(schema=branch).iter_errors(error.instance):
        _prefix(sub, error.absolute_path)
        yield from _refine(v, sub)


def _prefix(error: ValidationError, where: Iterable[Any]) -> None:
    """Make a sub-validation's error path absolute (jsonschema keeps the path in two attributes)."""
    error.path = error.relative_path = deque(where) + deque(error.relative_path)


def _branch_for(v: Draft202012Validator, schema: dict[str, Any], instance: Any) -> Any:
    """The oneOf branch this instance was meant for (by discriminator, else by JSON type), None if unclear."""
    from jsonschema.exceptions import ValidationError
    disc = schema.get("discriminator")
    if disc and isinstance(instance, dict):
        prop, mapping = disc["propertyName"], disc["mapping"]
        if prop not in instance:
            return ValidationError(f"{prop!r} is a required property", validator="required", validator_value=[prop],
                                   instance=instance, schema={"required": [prop]})
        value = instance[prop]
        if isinstance(value, (dict, list)) or value not in mapping:  # unhashable: no key of the mapping
            return ValidationError("bad discriminator", validator="enum", validator_value=list(mapping), instance=value,
                                   schema={"enum": list(mapping)}, path=deque([prop]))
        return _schema(mapping[value])
    kind = _json_type(instance)
    matching = [b for b in schema["oneOf"] if kind in _types_of(v, b) or (kind == "integer" and "number" in _types_of(v, b))]
    return matching[0] if len(matching) == 1 else None


def _types_of(v: Draft202012Validator, schema: dict[str, Any]) -> list[str]:
    """The JSON types a schema accepts, in the order it declares them."""
    if "oneOf" in schema:
        return list(dict.fromkeys(t for b in schema["oneOf"] for t in _types_of(v, b)))
    if "const" in schema:
        return [_json_type(schema["const"])]
    declared = schema.get("type", [])
    return [declared] if isinstance(declared, str) else list(declared)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


_A = {"string": "a string", "object": "an object", "array": "an array", "integer": "an integer", "number": "a number",
      "boolean": "a boolean", "null": "null"}


def _path(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _sort_key(parts: Iterable[Any]) -> tuple:
    return tuple((0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in parts)


def _quote_list(values: list[Any]) -> str:
    quoted = [f"'{v}'" for v in values]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + f", and {quoted[-1]}"


def _as_api_error(v: Draft202012Validator, e: ValidationError) -> APIError:
    path = _path(e.absolute_path)
    kind, value, instance = e.validator, e.validator_value, e.instance
    if kind == "required":
        name = next(p for p in value if p not in instance)
        param = f"{path}.{name}" if path else name
        return APIError(400, f"Missing required parameter: '{param}'.", param=param, code="missing_required_parameter")
    if kind == "additionalProperties":
        known = set(e.schema.get("properties", {}))
        extra = [k for k in instance if k not in known]
        if not path:
            return APIError(400, f"Unrecognized request argument supplied: {', '.join(extra)}")
        param = f"{path}.{extra[0]}"
        return APIError(400, f"Unknown parameter: '{param}'.", param=param, code="unknown_parameter")
    if kind in ("type", "oneOf"):
        wanted = _types_of_error(v, e)
        expected = _A[wanted[0]] if len(wanted) == 1 else "one of " + " or ".join(_A[t] for t in wanted)
        where = f"'{path}'" if path else "the request body"
        return APIError(400, f"Invalid type for {where}: expected {expected}, but got {_A[_json_type(instance)]} instead.",
                        param=path or None, code="invalid_type")
    if kind in ("enum", "const"):
        allowed = [value] if kind == "const" else [v for v in value if v is not None]
        return APIError(400, f"Invalid value: '{instance}'. Supported values are: {_quote_list(allowed)}.",
                        param=path, code="invalid_value")
    if kind == "minItems" and not instance:
        return APIError(400, f"Invalid '{path}': empty array. Expected an array with minimum length {value}, "
                        "but got an empty array instead.", param=path, code="empty_array")
    if kind in ("minItems", "maxItems"):
        side, word = ("below", "minimum") if kind == "minItems" else ("above", "maximum")
        return APIError(400, f"Invalid '{path}': array too {'short' if side == 'below' else 'long'}. Expected an array with {word} "
                        f"length {value}, but got an array with length {len(instance)} instead.",
                        param=path, code=f"array_{side}_{word[:3]}_length")
    if kind in ("minimum", "maximum"):
        side, op = ("below", ">=") if kind == "minimum" else ("above", "<=")
        declared = _types_of(v, e.schema)
        number = "integer" if "integer" in declared and "number" not in declared else "decimal"
        return APIError(400, f"Invalid '{path}': {number} {side} {kind} value. Expected a value {op} {value}, "
                        f"but got {instance} instead.", param=path, code=f"{number}_{side}_{kind[:3]}_value")
    if kind == "pattern":
        return APIError(400, f"Invalid '{path}': string does not match pattern. Expected a string that matches the "
                        f"pattern '{value}'.", param=path, code="invalid_value")
    return APIError(400, f"Invalid '{path or 'body'}': {e.message}.", param=path or None, code="invalid_value")


def _types_of_error(v: Draft202012Validator, e: ValidationError) -> list[str]:
    if e.validator == "type":
        return [e.validator_value] if isinstance(e.validator_value, str) else list(e.validator_value)
    return list(dict.fromkeys(t for branch in e.validator_value for t in _types_of(v, branch))) or ["object"]  # oneOf


def parse_body(raw: bytes) -> Any:
    """A request body as JSON, or the real API's 400 when it is not JSON."""
    try:
        return json.loads(raw)
    except ValueError:
        raise APIError(400, "We could not parse the JSON body of your request. (HINT: This likely means you aren't "
                       "using your HTTP library correctly. The API expects a JSON payload, but what was sent was not "
                       "valid JSON.)") from None
