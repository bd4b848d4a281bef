"""Sums: what the learner of the synthetic chapter writes."""

from __future__ import annotations


def add(a: int, b: int) -> int:
    """The sum of a and b."""
    # course: begin add
    return a + b
    # course: end add


def total(numbers: list[int]) -> int:
    """The sum of the numbers, 0 for none."""
    # course: begin total
    result = 0
    for number in numbers:
        result += number
    return result
    # course: end total
