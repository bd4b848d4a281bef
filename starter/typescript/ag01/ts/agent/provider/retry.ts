{#- What the learner receives in place of each region of the reference (reference/typescript/ag01/ts/agent/provider/retry.ts); everything else comes from the reference as it is (course.regions). -#}
{% block docstring %}
/**
 * Retrying a provider, but only while retrying cannot duplicate what the caller already has: the
 * backoff (RetryPolicy.delay), which errors are worth another try (retryable), and the wrapper
 * (withRetry) that holds deltas back until the first content delta. Section 2.5 of the chapter.
 */
{% endblock %}
{% block sleep %}
  throw new Error("TODO ag01 §2.5: a timer (setTimeout) that ends early, rejecting, when the signal aborts");
{% endblock %}
{% block RetryPolicy_delay %}
    throw new Error("TODO ag01 §2.5: Retry-After when the error carries one, else the capped backoff");
{% endblock %}
{% block retryable %}
  throw new Error("TODO ag01 §2.5: the table of what is worth another try");
{% endblock %}
{% block withRetry %}
  throw new Error("TODO ag01 §2.5: a Provider that retries up to the first content delta");
{% endblock %}
{% block helpers %}
// Your own helpers go here (the retrying provider, and the stream it returns, say).
{% endblock %}
