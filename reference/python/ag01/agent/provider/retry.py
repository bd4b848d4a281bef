# course: begin docstring
"""Retrying a provider, but only while retrying cannot duplicate what the caller already has."""
# course: end docstring

from __future__ import annotations

import http.client
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from agent.provider.errors import APIError, StreamCutError, StreamError
from agent.types import (
    CallOptions,
    Delta,
    DeltaStream,
    DoneDelta,
    ErrorDelta,
    Message,
    Provider,
    ToolDef,
    is_content,
)

# course: begin retryable_statuses
# overloaded, rate-limited or failing servers: the same request may succeed later
_RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})

# course: end retryable_statuses

@dataclass
class RetryPolicy:
    """How often and how patiently to retry. Times are in seconds."""

    max_attempts: int = 3  # counts the first attempt
    initial: float = 0.5
    max: float = 30.0
    multiplier: float = 2.0
    max_retry_after: float = 60.0  # a server asking for a longer wait than this is not retried
    sleep: Callable[[float], None] = time.sleep

    def delay(self, n: int, error: BaseException | None = None) -> float:
        # course: begin RetryPolicy_delay
        """The wait after failure `n` (1 after the first): the server's Retry-After, else exponential backoff."""
        if isinstance(error, APIError) and error.retry_after is not None:
            return error.retry_after  # the server knows when its capacity comes back
        # Grown one step at a time and stopped at the cap: initial * multiplier ** (n - 1) would
        # overflow a float after about a thousand failures.
        backoff = self.initial
        for _ in range(n - 1):
            if backoff >= self.max:
                break
            backoff *= self.multiplier
        return min(self.max, backoff)
        # course: end RetryPolicy_delay


def retryable(error: BaseException) -> bool:
    # course: begin retryable
    """Whether the same request could succeed if sent again."""
    if isinstance(error, APIError):
        return error.status in _RETRYABLE_STATUSES  # any other 4xx fails the same way every time
    if isinstance(error, StreamCutError):
        return True
    if isinstance(error, StreamError):
        return error.type == "server_error"
    # refused, reset or aborted connections (RemoteDisconnected among them), a body cut
    # mid-chunk, a socket timeout
    return isinstance(error, (ConnectionError, http.client.IncompleteRead, TimeoutError))
    # course: end retryable


def with_retry(provider: Provider, policy: RetryPolicy | None = None) -> RetryingProvider:
    # course: begin with_retry
    """`provider`, retrying failures that happen before the first content delta."""
    return RetryingProvider(provider, policy or RetryPolicy())
    # course: end with_retry


class RetryingProvider:
    # course: begin RetryingProvider
    """A Provider that retries another one up to the commitment boundary: the first content delta.

    Until then the caller has seen nothing, so the whole request can be sent again. After it the
    caller holds text that a second attempt would repeat, so every later delta, a failure
    included, passes through as it comes.
    """
    # course: end RetryingProvider

    def __init__(self, provider: Provider, policy: RetryPolicy) -> None:
        self._provider = provider
        self._policy = policy

    def chat_stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDef] = (),
        options: CallOptions | None = None,
    ) -> DeltaStream:
        # course: begin RetryingProvider_chat_stream
        """The inner provider's stream, with failures before the first content delta retried."""
        attempt = 0
        while True:
            attempt += 1
            try:
                stream = self._provider.chat_stream(messages, tools, options)
            except Exception as error:
                if not self._should_retry(error, attempt):
                    raise
                self._wait(attempt, error)
                continue
            held = _read_until_committed(stream)
            failure = held[-1].error if held and isinstance(held[-1], ErrorDelta) else None
            if failure is None or not self._should_retry(failure, attempt):
                return _replay(held, stream)
            stream.close()
            self._wait(attempt, failure)

    def _should_retry(self, error: BaseException, attempt: int) -> bool:
        if attempt >= self._policy.max_attempts or not retryable(error):
            return False
        # a server that asks for a longer wait than we accept gets its error back now
        retry_after = error.retry_after if isinstance(error, APIError) else None
        return retry_after is None or retry_after <= self._policy.max_retry_after

    def _wait(self, failures: int, error: BaseException) -> None:
        self._policy.sleep(self._policy.delay(failures, error))


def _read_until_committed(stream: DeltaStream) -> list[Delta]:
    """Reads deltas up to the first content delta, DoneDelta or ErrorDelta, that one included."""
    held: list[Delta] = []
    try:
        for delta in stream:
            held.append(delta)
            if is_content(delta) or isinstance(delta, (DoneDelta, ErrorDelta)):
                break
    except BaseException:
        stream.close()
        raise
    return held


def _replay(held: list[Delta], stream: DeltaStream) -> Iterator[Delta]:
    """The held-back deltas, then the rest of the stream; closing it closes the stream."""
    try:
        yield from held
        yield from stream
    finally:
        stream.close()
        # course: end RetryingProvider_chat_stream
