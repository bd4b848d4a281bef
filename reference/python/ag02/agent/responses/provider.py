# course: begin module
"""The boundary the agent loop awaits: open with retries, then consume and close exactly one stream."""
# course: end module

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
    # course: begin retryable
    """No answer at all, or a server error: the same request may open next time.

    Any other status is an answer about the request or the account (401 bad key, 429 rate or quota)
    that an immediate retry would only repeat.
    """
    return failure.status is None or 500 <= failure.status <= 599
    # course: end retryable


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
        # course: begin ResponsesProvider_complete
        """Retry only the opening; once a stream is acquired, one outcome, and the stream closed first."""
        stream = await self._open(build_request(history, tools, self.model))
        # From here on nothing is retried: the stream may already have shown text or buffered calls.
        try:
            return await self._consume(stream, tools)
        finally:
            # A return or a raise waits for this; if closing fails, the decision never reaches the loop.
            await stream.aclose()

    async def _open(self, request: Payload) -> EventStream:
        """The acquired stream, after at most MAX_ATTEMPTS attempts with jittered exponential waits."""
        failures = 0
        while True:
            try:
                return await self.open_stream(request)
            except OpenFailure as failure:
                failures += 1
                if failures == MAX_ATTEMPTS or not retryable(failure):
                    raise
                delay = BASE_DELAY * 2 ** (failures - 1) * self.rng.uniform(1 - JITTER, 1 + JITTER)
                self.report("retry", f"opening failed ({failure}); attempt {failures + 1} of {MAX_ATTEMPTS} in {delay:.2f} s")
                await self.sleep(delay)

    async def _consume(self, stream: EventStream, tools: Sequence[ToolSpec]) -> Message:
        """Events into the assembly until it releases a decision; a stream that just stops is a failure."""
        assembly = ResponseAssembly(tools, self.report)
        async for event in stream:
            decision = assembly.accept(event)
            if decision is not None:
                return decision
        raise ResponseFailure("stream_ended", "the stream ended without response.completed")
        # course: end ResponsesProvider_complete
