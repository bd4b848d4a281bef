"""The boundary the agent loop awaits: open with retries, then consume and close exactly one stream.

`retryable` and `ResponsesProvider.complete` are yours (sections 2.5 and 2.6 of `course show ag02`).
The imports are the ones the reference solution uses; add or drop any.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Sequence

from agent.responses.assembly import ResponseAssembly
from agent.responses.request import build_request
from agent.responses.types import (
    EventStream,
    Message,
    OpenFailure,
    OpenStream,
    Payload,
    Report,
    ResponseFailure,
    ToolSpec,
)

MAX_ATTEMPTS = 3  # opening attempts, the first one included
BASE_DELAY = 0.25  # seconds before the second attempt; doubles for the third
JITTER = 0.10  # each wait is scaled by a random factor in [1 - JITTER, 1 + JITTER]


def retryable(failure: OpenFailure) -> bool:
    """Return True when the same request may open next time: no answer at all (status None) or a
    5xx status (500 to 599). Every other status, 401 and 429 included, is False."""
    raise NotImplementedError("retryable: see section 2.5 of `course show ag02`.")


def _ignore(kind: str, detail: str) -> None:
    """The default observer: shows nothing."""


class ResponsesProvider:
    """Turns the portable history into one validated assistant decision per call to `complete`."""

    def __init__(
        self,
        open_stream: OpenStream,
        model: str,
        *,
        report: Report = _ignore,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.open_stream = open_stream
        self.model = model
        self.report = report
        self.sleep = sleep
        self.rng = rng or random.Random()

    async def complete(self, history: Sequence[Message], tools: Sequence[ToolSpec]) -> Message:
        """Return the validated decision for build_request(history, tools, self.model).

        Opening: await self.open_stream(request). An OpenFailure for which retryable() is True is
        retried, at most MAX_ATTEMPTS attempts in all; before attempt n + 1 (n failures so far)
        report("retry", detail) and await self.sleep(BASE_DELAY * 2 ** (n - 1) *
        self.rng.uniform(1 - JITTER, 1 + JITTER)). A failure that may not be retried, or the last
        one, is raised as it came; any other exception propagates at once.

        Once a stream is acquired nothing is retried: feed each event to a new
        ResponseAssembly(tools, self.report) and return the Message it releases. A stream that ends
        first raises ResponseFailure("stream_ended", ...); any other failure (an assembly failure,
        an exception from the stream itself) propagates as it is.

        Close the acquired stream (await stream.aclose()) exactly once before returning or raising,
        whatever happened, cancellation included; if closing raises, that exception replaces the
        decision.
        """
        raise NotImplementedError("ResponsesProvider.complete: see sections 2.5 and 2.6 of `course show ag02`.")
