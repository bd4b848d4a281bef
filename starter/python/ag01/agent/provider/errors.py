"""The errors a provider raises, or reports in an ErrorDelta. Given: nothing to write here."""

from __future__ import annotations


class ProviderError(Exception):
    """Base of the provider's own errors."""


class APIError(ProviderError):
    """The server answered the request with a non-2xx status.

    `type`, `code` and `message` come from the body's {"error": {...}} when it has one;
    `retry_after` is the Retry-After header in seconds (None when absent or unreadable).
    """

    def __init__(
        self,
        status: int,
        type: str = "",
        code: str = "",
        message: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(status, type, code, message, retry_after)
        self.status = status
        self.type = type
        self.code = code
        self.message = message
        self.retry_after = retry_after

    def __str__(self) -> str:
        text = f"HTTP {self.status}"
        if self.type:
            text += f" {self.type}"
        if self.message:
            text += f": {self.message}"
        return text


class StreamCutError(ProviderError):
    """The body ended before data: [DONE]: a reset, a crashed server or a proxy timeout cut it short."""

    def __init__(self, message: str = "the stream ended before data: [DONE]") -> None:
        super().__init__(message)


class StreamError(ProviderError):
    """The server reported a failure inside the stream, as an event data: {"error": {...}}."""

    def __init__(self, type: str = "", code: str = "", message: str = "") -> None:
        super().__init__(type, code, message)
        self.type = type
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"stream error {self.type or 'unknown'}: {self.message}"
