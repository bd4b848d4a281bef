{#- What the learner receives in place of each region of the reference (reference/typescript/ag01/ts/agent/types.ts, between `// course: begin NAME` and `// course: end NAME`); everything else comes from the reference as it is (course.regions). -#}
{% block isContent %}
  throw new Error("TODO ag01 §2.1: true for text and the three tool-call deltas");
{% endblock %}
{% block Accumulator_fields %}
  // your fields: the text pieces, the ended calls by index, the last usage, the finish reason,
  // whether a DoneDelta came, the first error
{% endblock %}
{% block Accumulator_add %}
    throw new Error("TODO ag01 §2.1: fold one delta in (a switch on delta.type)");
{% endblock %}
{% block Accumulator_message %}
    throw new Error("TODO ag01 §2.1: a new Message: the text joined, the ended calls by index, \"{}\" for no arguments");
{% endblock %}
{% block Accumulator_usage %}
    throw new Error("TODO ag01 §2.1: the last usage (a copy), zeros before any");
{% endblock %}
{% block Accumulator_finishReason %}
    throw new Error("TODO ag01 §2.1: the DoneDelta's finish reason, \"\" before it");
{% endblock %}
{% block Accumulator_error %}
    throw new Error("TODO ag01 §2.1: the first ErrorDelta's error, else IncompleteStreamError until a DoneDelta");
{% endblock %}
{% block collect %}
  throw new Error("TODO ag01 §2.1: fold the whole stream (for await), then throw its error or give message and usage");
{% endblock %}
{% block Verdict_allow %}
    throw new Error("TODO ag01 §2.7");
{% endblock %}
{% block Verdict_deny %}
    throw new Error("TODO ag01 §2.7");
{% endblock %}
{% block Verdict_needApproval %}
    throw new Error("TODO ag01 §2.7");
{% endblock %}
{% block callContextStore %}
// your store of the call context here: an AsyncLocalStorage<CallContext> (node:async_hooks)

{% endblock %}
{% block currentCallContext %}
  throw new Error("TODO ag01 §2.7: the context set for the code running now, else a tainted one");
{% endblock %}
{% block withCallContext %}
  throw new Error("TODO ag01 §2.7: run fn with cc as the call context");
{% endblock %}
{% block Direct_runStep %}
    throw new Error("TODO ag01 §2.7");
{% endblock %}
{% block llmStep %}
  throw new Error("TODO ag01 §2.7: \"llm/3\"");
{% endblock %}
{% block toolStep %}
  throw new Error("TODO ag01 §2.7: \"tool/3/0/get_weather\"");
{% endblock %}
{% block stepToolName %}
  throw new Error("TODO ag01 §2.7: the name after the third \"/\" of a tool step, ASCII digits between");
{% endblock %}
