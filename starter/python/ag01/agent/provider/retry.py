{#- What the learner receives in place of each region of the reference
    (reference/python/ag01/agent/provider/retry.py, between `# course: begin NAME` and `# course: end NAME`);
    everything else comes from the reference as it is (course.regions). -#}
{% block docstring %}
"""Retrying a provider, but only while retrying cannot duplicate what the caller already has.

The RetryPolicy fields are given; `delay`, `retryable`, `with_retry` and
`RetryingProvider.chat_stream` are yours (section 2.3 of `course show ag01`).
The imports below are the ones the reference solution uses; add or drop any.
"""
{% endblock %}
{% block retryable_statuses %}
{% endblock %}
{% block RetryPolicy_delay %}
        """Return the wait, in seconds, after failure number `n` (n == 1 after the first failure).

        When `error` is an APIError whose retry_after is not None, return retry_after, even
        when it exceeds max (whether to wait that long is chat_stream's decision).
        Otherwise return min(max, initial * multiplier ** (n - 1)): 0.5, 1, 2, 4, ... with the
        defaults.
        """
        raise NotImplementedError("RetryPolicy.delay: see section 2.3 of `course show ag01`.")
{% endblock %}
{% block retryable %}
    """Return True when the same request could succeed if sent again.

    True for: APIError with status 408, 429, 500, 502, 503 or 504; StreamCutError; StreamError
    whose type is "server_error"; ConnectionError and its subclasses (refused, reset, aborted,
    broken pipe, http.client.RemoteDisconnected); http.client.IncompleteRead; TimeoutError.
    False for everything else: other statuses, other StreamErrors, a ProviderError (invalid
    JSON), any other exception.
    """
    raise NotImplementedError("retryable: see the table in section 2.3 of `course show ag01`.")
{% endblock %}
{% block with_retry %}
    """Return RetryingProvider(provider, policy), with RetryPolicy() when policy is None."""
    raise NotImplementedError("with_retry: see section 2.3 of `course show ag01`.")
{% endblock %}
{% block RetryingProvider %}
    """A Provider that retries another one up to the commitment boundary: the first content delta."""
{% endblock %}
{% block RetryingProvider_chat_stream %}
        """Call the inner provider, retrying failures that happen before the first content delta.

        A failure may be retried when retryable(error) says so, attempts are left (max_attempts
        counts the first attempt; raised failures and failures inside a stream count alike), and
        it is not an APIError whose retry_after exceeds policy.max_retry_after (equal is fine).
        Before each new attempt call policy.sleep(policy.delay(n, error)), n being the number of
        failures so far.

        1. Call the inner chat_stream. If it raises: retry if allowed, else re-raise.
        2. Read deltas from the stream and hold them back until the first content delta
           (is_content: a tool call counts as much as text), a DoneDelta or an ErrorDelta. An
           ErrorDelta there whose error may be retried: close that stream (before sleeping),
           drop what you held (usage included), sleep, and start again at 1. If reading the
           stream raises, close it and let the exception through.
        3. Otherwise you are committed: return a generator that yields the held deltas, then
           every remaining delta of the stream unchanged (a later ErrorDelta included: never
           retried, the caller already has text), and closes the inner stream in a `finally`.
        When no attempt is left, the last failure reaches the caller as it came: raised, or as
        an ErrorDelta in the returned stream.
        """
        raise NotImplementedError("RetryingProvider.chat_stream: see section 2.3 of `course show ag01`.")
{% endblock %}
