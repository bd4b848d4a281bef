"""The OpenAI-compatible provider: streaming client, server-sent events, errors and retries."""

from agent.provider.errors import APIError, ProviderError, StreamCutError, StreamError
from agent.provider.sse import Decoder, Event, EventReader
from agent.provider.openai import Config, OpenAIProvider, request_body
from agent.provider.retry import RetryingProvider, RetryPolicy, retryable, with_retry

__all__ = [
    "APIError",
    "Config",
    "Decoder",
    "Event",
    "EventReader",
    "OpenAIProvider",
    "ProviderError",
    "RetryPolicy",
    "RetryingProvider",
    "StreamCutError",
    "StreamError",
    "request_body",
    "retryable",
    "with_retry",
]
