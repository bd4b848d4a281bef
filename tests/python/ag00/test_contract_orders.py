"""Catalog: executing the read (agent/contract/orders.py)."""

import json

import pytest

from agent.contract import orders

ME = orders.Principal(tenant="shop-a", user="u-1")
DENIAL_KEYS = ["error"]


def _call(arguments, name="read_order", call_id="call_t"):
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return {"type": "function_call", "id": "fc_t", "call_id": call_id, "name": name, "arguments": arguments}


def _run(call, principal=ME):
    got = orders.execute_call(call, principal)
    return got.denied, got.payload


def test_read_own_order():
    got = _run(_call({"order_id": "o-1"}))
    want = (None, {"order_id": "o-1", "status": "delivered", "source": "read_order"})
    assert got == want, f"o-1 read by its owner shop-a/u-1: got (denied, payload) {got!r}, want {want!r}"
    other = orders.Principal(tenant="shop-b", user="u-2")
    got = _run(_call({"order_id": "o-2"}), other)
    want = (None, {"order_id": "o-2", "status": "processing", "source": "read_order"})
    assert got == want, f"o-2 read by its owner shop-b/u-2: got {got!r}, want {want!r} (the principal passed in decides)"


def test_unknown_tool_denied():
    for name in ("update_order", "Read_Order", "", None):
        got = _run(_call({"order_id": "o-1"}, name=name))
        want = ("unknown_tool", {"error": "unknown_tool"})
        assert got == want, f"a call to tool {name!r}: got (denied, payload) {got!r}, want {want!r}"


@pytest.mark.parametrize(
    "case, arguments",
    [pytest.param(case, arguments, id=case) for case, arguments in [
        ("not JSON", "{order_id: o-1}"),
        ("truncated JSON", '{"order_id": "o-'),
        ("a JSON list", '["o-1"]'),
        ("a JSON string", '"o-1"'),
        ("empty object", "{}"),
        ("order_id is a number", '{"order_id": 1}'),
        ("order_id is empty", '{"order_id": ""}'),
        ("order_id is null", '{"order_id": null}'),
        ("an extra field", '{"order_id": "o-1", "include_history": true}'),
    ]],
)
def test_arguments_validated(case, arguments):
    got = _run(_call(arguments))
    want = ("invalid_arguments", {"error": "invalid_arguments"})
    assert got == want, f"arguments {arguments!r} ({case}): got (denied, payload) {got!r}, want {want!r}"


@pytest.mark.parametrize(
    "extra",
    [{"tenant": "shop-a"}, {"user": "u-1"}, {"tenant": "shop-b", "user": "u-2"}, {"principal": {"tenant": "shop-a"}}],
    ids=["own-tenant", "own-user", "other-identity", "nested-principal"],
)
def test_extra_identity_fields_refused(extra):
    arguments = {"order_id": "o-1", **extra}
    got = _run(_call(arguments))
    want = ("invalid_arguments", {"error": "invalid_arguments"})
    assert got == want, (
        f"arguments {arguments!r}: got (denied, payload) {got!r}, want {want!r}; "
        "identity comes from the session, even when the model's claim happens to match it"
    )


def test_cross_tenant_denied():
    got = _run(_call({"order_id": "o-2"}))
    want = ("permission_denied", {"error": "permission_denied"})
    assert got == want, f"shop-a/u-1 asking for o-2 of shop-b: got (denied, payload) {got!r}, want {want!r}"
    stranger = orders.Principal(tenant="shop-b", user="u-1")
    got = _run(_call({"order_id": "o-1"}), stranger)
    assert got == want, f"shop-b/u-1 asking for o-1 of shop-a (same user id, other tenant): got {got!r}, want {want!r}"


def test_other_user_denied():
    got = _run(_call({"order_id": "o-3"}))
    want = ("permission_denied", {"error": "permission_denied"})
    assert got == want, f"shop-a/u-1 asking for o-3 (shop-a, user u-7): got (denied, payload) {got!r}, want {want!r}"


def test_unknown_order_denied():
    for order_id in ("o-404", "O-1", " o-1"):
        got = _run(_call({"order_id": order_id}))
        want = ("permission_denied", {"error": "permission_denied"})
        assert got == want, (
            f"unknown order {order_id!r}: got (denied, payload) {got!r}, want {want!r}; "
            "the same answer as a foreign order, so ids of other accounts cannot be probed"
        )


@pytest.mark.parametrize(
    "case, call",
    [
        pytest.param("other tenant", _call({"order_id": "o-2"}), id="o-2"),
        pytest.param("other user", _call({"order_id": "o-3"}), id="o-3"),
        pytest.param("unknown order", _call({"order_id": "o-404"}), id="o-404"),
        pytest.param("identity fields", _call({"order_id": "o-2", "tenant": "shop-b"}), id="identity"),
        pytest.param("unknown tool", _call({"order_id": "o-1"}, name="read_any_order"), id="tool"),
    ],
)
def test_denial_leaks_nothing(case, call):
    result = orders.execute_call(call, ME)
    keys = sorted(result.payload)
    assert keys == DENIAL_KEYS, f"{case}: denial payload keys: got {keys!r}, want {DENIAL_KEYS!r}"
    text = json.dumps(result.payload)
    protected = [v for order in orders.ORDERS.values() for v in (order["status"], order["tenant"], order["user"])]
    leaked = [v for v in protected if v in text]
    assert not leaked, f"{case}: the denial {text} carries order fields {leaked!r}; want none"
    assert result.denied, f"{case}: got denied={result.denied!r}, want a reason"
