"""Catalog: executing the read (agent/contract/orders.py)."""

import json

import pytest

import ag00_generated as generated
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
    call = _call({"order_id": "o-1"})
    kept = json.dumps(call, sort_keys=True)
    orders.execute_call(call, ME)
    assert json.dumps(call, sort_keys=True) == kept, f"execute_call changed the call item it was given: now {call!r}, was {kept}"


def test_unknown_tool_denied():
    for name in ("update_order", "Read_Order", "READ_ORDER", " read_order", "read_order ", "read_order\n", "read_orders",
                 "read_order_v2", "read", "", None, 7):
        got = _run(_call({"order_id": "o-1"}, name=name))
        want = ("unknown_tool", {"error": "unknown_tool"})
        assert got == want, f"a call to tool {name!r}: got (denied, payload) {got!r}, want {want!r} (the name must match exactly)"
    nameless = _call({"order_id": "o-1"})
    del nameless["name"]
    got = _run(nameless)
    assert got == ("unknown_tool", {"error": "unknown_tool"}), f"a call with no name field: got (denied, payload) {got!r}, want ('unknown_tool', {{'error': 'unknown_tool'}})"


@pytest.mark.parametrize(
    "case, call, reason",
    [
        pytest.param("an unknown tool with arguments that are not JSON", _call("{not json", name="delete_order"), "unknown_tool", id="tool-before-json"),
        pytest.param("an unknown tool with an extra field", _call({"order_id": "o-1", "tenant": "shop-a"}, name="readOrder"), "unknown_tool",
                     id="tool-before-fields"),
        pytest.param("an unknown tool asking for a foreign order", _call({"order_id": "o-2"}, name="read_orders"), "unknown_tool", id="tool-before-owner"),
        pytest.param("an extra field asking for a foreign order", _call({"order_id": "o-2", "tenant": "shop-b"}), "invalid_arguments",
                     id="fields-before-owner"),
        pytest.param("an extra field asking for an unknown order", _call({"order_id": "o-404", "note": "x"}), "invalid_arguments",
                     id="fields-before-unknown"),
    ],
)
def test_checks_run_in_order(case, call, reason):
    got = _run(call)
    want = (reason, {"error": reason})
    assert got == want, f"{case}: got (denied, payload) {got!r}, want {want!r} (name, then arguments, then ownership)"


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
        ("JSON null", "null"),
        ("JSON true", "true"),
        ("a JSON number", "1"),
        ("an empty list", "[]"),
        ("a list holding the key", '["order_id"]'),
        ("order_id is a list", '{"order_id": ["o-1"]}'),
        ("order_id is an object", '{"order_id": {"id": "o-1"}}'),
        ("order_id is true", '{"order_id": true}'),
        ("key in another case", '{"Order_Id": "o-1"}'),
        ("empty text", ""),
        ("only blanks", "   "),
        ("two objects", '{"order_id": "o-1"}{"order_id": "o-2"}'),
    ]],
)
def test_arguments_validated(case, arguments):
    got = _run(_call(arguments))
    want = ("invalid_arguments", {"error": "invalid_arguments"})
    assert got == want, f"arguments {arguments!r} ({case}): got (denied, payload) {got!r}, want {want!r}"


@pytest.mark.parametrize(
    "case, arguments",
    [pytest.param(case, arguments, id=case) for case, arguments in [
        ("a dict, not JSON text", {"order_id": "o-1"}),
        ("None", None),
        ("missing", ...),
        ("bytes", b'{"order_id": "o-1"}'),
        ("the object's JSON encoded again, as a JSON string", json.dumps(json.dumps({"order_id": "o-1"}))),
    ]],
)
def test_arguments_must_be_json_text(case, arguments):
    call = {"type": "function_call", "id": "fc_t", "call_id": "call_t", "name": "read_order", "arguments": arguments}
    if arguments is ...:
        del call["arguments"]
    got = _run(call)
    want = ("invalid_arguments", {"error": "invalid_arguments"})
    assert got == want, f"arguments {case}: got (denied, payload) {got!r}, want {want!r} (arguments are a JSON string)"


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


@pytest.mark.parametrize(
    "case, order_id, tenant, user",
    [
        pytest.param("shop-a/u-1 asking for o-2 of shop-b", "o-2", "shop-a", "u-1", id="o-2-from-shop-a"),
        pytest.param("shop-b/u-1 asking for o-1 of shop-a (same user id, other tenant)", "o-1", "shop-b", "u-1", id="same-user-other-shop"),
        pytest.param("SHOP-A/u-1 asking for o-1 of shop-a (tenants match exactly)", "o-1", "SHOP-A", "u-1", id="tenant-case"),
        pytest.param("'shop-a '/u-1 asking for o-1 (tenants match exactly)", "o-1", "shop-a ", "u-1", id="tenant-blank"),
        pytest.param("shop/u-1 asking for o-1 (tenants match exactly)", "o-1", "shop", "u-1", id="tenant-prefix"),
    ],
)
def test_cross_tenant_denied(case, order_id, tenant, user):
    got = _run(_call({"order_id": order_id}), orders.Principal(tenant=tenant, user=user))
    want = ("permission_denied", {"error": "permission_denied"})
    assert got == want, f"{case}: got (denied, payload) {got!r}, want {want!r}"


def test_other_user_denied():
    got = _run(_call({"order_id": "o-3"}))
    want = ("permission_denied", {"error": "permission_denied"})
    assert got == want, f"shop-a/u-1 asking for o-3 (shop-a, user u-7): got (denied, payload) {got!r}, want {want!r}"
    for user in ("U-1", "u-1 ", "u-11", "u"):
        got = _run(_call({"order_id": "o-1"}), orders.Principal(tenant="shop-a", user=user))
        assert got == want, f"shop-a/{user!r} asking for o-1 of u-1: got {got!r}, want {want!r} (users match exactly)"


@pytest.mark.parametrize(
    "order_id",
    ["o-404", "O-1", " o-1", "o-1 ", "o-1\n", "   ", "o-01", "o-\uff11", "o-\u0661", "o\u20111", "\uff4f-1", "o-" + "9" * 200,
     "o-1" + "\u200b"],
    ids=["o-404", "upper-case", "leading-blank", "trailing-blank", "newline", "blanks", "o-01", "fullwidth-digit",
         "arabic-indic-digit", "non-breaking-hyphen", "fullwidth-letter", "long-id", "zero-width-space"],
)
def test_unknown_order_denied(order_id):
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


def test_receipt_is_a_copy():
    before = {  # the teaching data as the chapter gives it
        "o-1": {"tenant": "shop-a", "user": "u-1", "status": "delivered"},
        "o-2": {"tenant": "shop-b", "user": "u-2", "status": "processing"},
        "o-3": {"tenant": "shop-a", "user": "u-7", "status": "returned"},
    }
    first = orders.execute_call(_call({"order_id": "o-1"}), ME)
    orders.execute_call(_call({"order_id": "o-2"}), ME)  # a denied read must not change anything either
    first.payload["status"] = "shipped"
    first.payload["tenant"] = "shop-b"
    second = orders.execute_call(_call({"order_id": "o-1"}), ME)
    want = {"order_id": "o-1", "status": "delivered", "source": "read_order"}
    assert second.payload == want, f"a second read of o-1 after editing the first receipt: got {second.payload!r}, want {want!r}"
    assert orders.ORDERS == before, f"reading (and editing a receipt) changed orders.ORDERS: got {orders.ORDERS!r}, want {before!r}"
    denial = orders.execute_call(_call({"order_id": "o-3"}), ME)
    denial.payload["error"] = "edited"
    denial.payload["status"] = "returned"
    again = orders.execute_call(_call({"order_id": "o-404"}), ME).payload
    assert again == {"error": "permission_denied"}, f"a denial after editing an earlier denial's payload: got {again!r}, want {{'error': 'permission_denied'}} (each result is a new dict)"


@pytest.mark.parametrize("field", ["order_id", "tenant", "user"])
def test_near_identities_denied(field):
    wrong = []
    for near in generated.near_strings(sum(map(ord, field)), {"order_id": "o-1", "tenant": "shop-a", "user": "u-1"}[field], 60):
        if field == "order_id":
            if not near:
                continue  # an empty id is invalid_arguments, a different rule
            got = _run(_call({"order_id": near}))
        else:
            who = {"tenant": "shop-a", "user": "u-1", field: near}
            got = _run(_call({"order_id": "o-1"}), orders.Principal(**who))
        if got != ("permission_denied", {"error": "permission_denied"}):
            wrong.append(f"{field} {near!r}: got {got!r}")
    assert not wrong, (f"o-1 belongs to shop-a/u-1 exactly; {len(wrong)} near misses of its {field} were not "
                       "permission_denied with payload {'error': 'permission_denied'}:\n" + "\n".join(wrong[:8]))


@pytest.mark.parametrize("what", ["tool-name", "arguments"])
def test_near_calls_refused(what):
    wrong = []
    if what == "tool-name":
        for name in generated.near_strings(7, "read_order", 60):
            got = _run(_call({"order_id": "o-1"}, name=name))
            if got != ("unknown_tool", {"error": "unknown_tool"}):
                wrong.append(f"name {name!r}: got {got!r}")
    else:
        for value in generated.json_values(11, 60):
            got = _run(_call(json.dumps(value)))
            if got != ("invalid_arguments", {"error": "invalid_arguments"}):
                wrong.append(f"arguments {json.dumps(value)}: got {got!r}")
    assert not wrong, f"{len(wrong)} generated calls ({what}) not refused as they should be:\n" + "\n".join(wrong[:8])
