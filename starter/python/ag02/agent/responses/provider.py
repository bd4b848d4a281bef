{#- What the learner receives in place of each region of the reference
    (reference/python/ag02/agent/responses/provider.py, between `# course: begin NAME` and `# course: end NAME`);
    everything else comes from the reference as it is (course.regions). -#}
{% block module %}
"""The boundary the agent loop awaits: open with retries, then consume and close exactly one stream.

`retryable` and `ResponsesProvider.complete` are yours (sections 2.5 and 2.6 of `course show ag02`).
The imports are the ones the reference solution uses; add or drop any.
"""
{% endblock %}
{% block retryable %}
    """Return True when the same request may open next time: no answer at all (status None) or a
    5xx status (500 to 599). Every other status, 401 and 429 included, is False."""
    raise NotImplementedError("retryable: see section 2.5 of `course show ag02`.")
{% endblock %}
{% block ResponsesProvider_complete %}
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
{% endblock %}
