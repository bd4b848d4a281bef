{#- What the learner receives in place of each region of the reference (reference/typescript/ag01/ts/agent/provider/openai.ts); everything else comes from the reference as it is (course.regions). -#}
{% block docstring %}
/**
 * A Provider for any server that speaks the OpenAI chat-completions API with streaming, over
 * Node's fetch. Section 2.4 of the chapter gives the request and its answer, 2.6 the faults and
 * timeouts, 7 cancellation.
 */
{% endblock %}
{% block requestBody %}
  throw new Error("TODO ag01 §2.4: the request's JSON body, as a plain object that shares nothing with its arguments");
{% endblock %}
{% block OpenAIProvider_fields %}
  readonly #config: Config;
{% endblock %}
{% block OpenAIProvider_constructor %}
    this.#config = config; // TODO ag01 §2.4: refuse a baseURL that is not http(s) with a host (TypeError)
{% endblock %}
{% block OpenAIProvider_chatStream %}
    throw new Error("TODO ag01 §2.4 to 2.6 and §7: send the request, check the status, stream the deltas");
  }
{% endblock %}
