"""Seeded generators for the ag00 catalog: many near misses of one kind, the same ones on every run.

Each generator takes a seed and returns a list; a failure message names the generated value, so a
failure is as readable (and as repeatable) as a hand-written case.
"""

from __future__ import annotations

import json
import random

RECEIPT_O1 = {"order_id": "o-1", "status": "delivered", "source": "read_order"}

# Characters that slip through careless comparisons: case, blanks, look-alikes, invisible ones.
TRICKY = ["O", "0", "1", "l", "I", " ", "\t", "\n", "\u00a0", "\u200b", "\u2011", "\uff11", "\u0661", "\uff4f",
          "-", "_", ".", "/", "'", '"', "é", "\u0130", "\u212a"]


def _mutate(rng: random.Random, text: str) -> str:
    """One small edit of `text`: insert, replace, drop or recase a character."""
    i = rng.randrange(len(text) + 1)
    how = rng.choice(["insert", "replace", "drop", "case", "wrap"])
    if how == "insert" or not text:
        return text[:i] + rng.choice(TRICKY) + text[i:]
    i = min(i, len(text) - 1)
    if how == "replace":
        return text[:i] + rng.choice(TRICKY) + text[i + 1:]
    if how == "drop":
        return text[:i] + text[i + 1:]
    if how == "case":
        return text.swapcase() if text.swapcase() != text else text + "x"
    return rng.choice([" ", "\n", "\u200b"]) + text + rng.choice(["", " ", "\t"])


def near_strings(seed: int, text: str, count: int) -> list[str]:
    """`count` distinct strings close to `text`, never `text` itself."""
    rng = random.Random(seed)
    found: list[str] = []
    while len(found) < count:
        candidate = _mutate(rng, text)
        if rng.random() < 0.3:
            candidate = _mutate(rng, candidate)
        if candidate != text and candidate not in found:
            found.append(candidate)
    return found


def json_values(seed: int, count: int) -> list:
    """Assorted JSON values that are not an object holding exactly one string order_id."""
    rng = random.Random(seed)
    scalars = [None, True, False, 0, 1, -1, 1.5, "", " ", "o-1", "order_id", [], {}, ["o-1"], {"id": "o-1"}]
    values: list = []
    while len(values) < count:
        shape = rng.choice(["scalar", "list", "wrong-key", "extra-key", "bad-id", "nested"])
        if shape == "scalar":
            value = rng.choice(scalars)
        elif shape == "list":
            value = [rng.choice(scalars) for _ in range(rng.randrange(3))] + [{"order_id": "o-1"}] * rng.randrange(2)
        elif shape == "wrong-key":
            value = {rng.choice(["Order_Id", "order", "orderId", "order_id ", " order_id", "ORDER_ID", "id"]): "o-1"}
        elif shape == "extra-key":
            value = {"order_id": "o-1", rng.choice(["tenant", "user", "note", "", "order_id2", "x"]): rng.choice(scalars)}
        elif shape == "bad-id":
            value = {"order_id": rng.choice([None, 1, 0, True, False, 1.0, "", [], {}, ["o-1"], {"id": "o-1"}])}
        else:
            value = {"order_id": {"order_id": "o-1"}} if rng.random() < 0.5 else {"args": {"order_id": "o-1"}}
        if value not in values:
            values.append(value)
    return values


def receipt_near_misses(seed: int, count: int) -> list:
    """Values that look like RECEIPT_O1 but are not equal to it."""
    rng = random.Random(seed)
    found: list = []
    while len(found) < count:
        answer = dict(RECEIPT_O1)
        how = rng.choice(["drop", "add", "value", "value", "wrap", "type"])
        key = rng.choice(sorted(answer))
        if how == "drop":
            del answer[key]
        elif how == "add":
            answer[rng.choice(["note", "tenant", "user", "verified", "Status"])] = rng.choice(["yes", "shop-a", None, True])
        elif how == "value":
            answer[key] = near_strings(rng.randrange(10**6), answer[key], 1)[0]
        elif how == "wrap":
            answer = rng.choice([[answer], {"answer": answer}, {"receipt": answer}])
        else:
            answer[key] = rng.choice([None, 1, [answer[key]], {"value": answer[key]}])
        if answer != RECEIPT_O1 and answer not in found:
            found.append(answer)
    return found


def receipt_texts(seed: int, count: int) -> list[str]:
    """RECEIPT_O1 written as JSON in many equal ways: key order, spacing, indentation, escapes."""
    rng = random.Random(seed)
    found: list[str] = []
    while len(found) < count:
        keys = sorted(RECEIPT_O1)
        rng.shuffle(keys)
        ordered = {k: RECEIPT_O1[k] for k in keys}
        text = json.dumps(ordered, indent=rng.choice([None, 0, 1, 4]),
                          separators=rng.choice([None, (",", ":"), (" , ", " : ")]), ensure_ascii=rng.random() < 0.5)
        if rng.random() < 0.3:
            text = text.replace("-", "\\u002d")  # an escaped hyphen is the same string
        text = rng.choice(["", " ", "\n", "\t"]) + text + rng.choice(["", " ", "\n", "\r\n"])
        if text not in found:
            found.append(text)
    return found
