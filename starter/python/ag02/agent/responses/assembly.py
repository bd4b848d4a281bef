{#- What the learner receives in place of each region of the reference
    (reference/python/ag02/agent/responses/assembly.py, between `# course: begin NAME` and `# course: end NAME`);
    everything else comes from the reference as it is (course.regions). -#}
{% block module %}
"""Native Responses events folded into one assistant decision, released only at validated completion.

`ResponseAssembly.accept` is yours (sections 2.2 to 2.4 and 3 of `course show ag02`); the limits,
PendingCall and the helpers' names are suggestions. The imports are the ones the reference solution
uses; add or drop any.
"""
{% endblock %}
{% block module_2 %}
{% endblock %}
{% block ResponseAssembly %}
    """Accepts one response's events in order; `accept` returns a Message only at response.completed.

    Attributes the catalog reads: response_id (None until response.created), and pending, a dict of
    the function calls buffered so far by item id (empty again after any failure).
    """
{% endblock %}
{% block ResponseAssembly___init__ %}
        self.pending: dict[str, PendingCall] = {}
{% endblock %}
{% block ResponseAssembly_accept %}
        """Fold one decoded event in: the validated decision at response.completed, else None.

        Every failure raises ResponseFailure(code, detail) with one of the codes below and a
        non-empty detail saying what was seen. After a failure pending is empty; after a failure
        or after response.completed, any further event fails "ended".

        Lifecycle (section 2.2):
        - an event must be a dict with a non-empty string "type", else "malformed_event";
        - response.created comes first ("not_started" for anything before it), once
          ("duplicate_created"), and its response object carries a non-empty id ("missing_id";
          no response object at all is "malformed_event");
        - every later event belongs to that response: a "response_id" field, or a "response"
          object's "id", naming another response is "identity_mismatch";
        - response.failed, response.incomplete and error fail with the code "failed", "incomplete"
          or "error"; the detail carries what the provider said (the first non-empty of its
          message, incomplete reason or code; an error event has them at its top level or under
          "error"), and the buffered calls are discarded.
        Progress (section 2.4):
        - response.output_text.delta and response.refusal.delta: report("text" or "refusal",
          delta); all of them together may hold at most MAX_PREVIEW_CHARS characters
          ("preview_limit"; the delta that crosses the bound is not reported);
        - response.output_item.added with a function_call item: buffer PendingCall(call_id, name,
          arguments) under the item id; an id already buffered is "duplicate_item", a ninth call is
          "call_limit"; other item types are judged at completion;
        - response.function_call_arguments.delta: append the delta to the call of its item_id
          ("unknown_item" if there is none), then report("arguments", detail) where detail names
          the item id and the number of characters buffered; a call's arguments may hold at most
          MAX_ARGUMENT_CHARS characters, counting those the added item brought ("argument_limit");
        - response.function_call_arguments.done states the call's final arguments: they must equal
          the fragments buffered for its item_id, byte for byte ("call_mismatch", also when no
          fragment came; "unknown_item" for an item never added; "malformed_event" when
          "arguments" is not a string). It closes the call: a later fragment or done event for it
          is "call_mismatch". Checked, and still progress: it returns None;
        - response.output_item.done of a function_call item restates the call: its item id must be
          buffered ("unknown_item"), its call_id and name, and its arguments when it has them,
          those of the buffered call ("call_mismatch"). Progress too: None;
        - a field that should be a string and is not, or should be an object and is not, is
          "malformed_event"; every other event type, each other *.done included, is progress: None.
        Completion (section 2.3), at response.completed, before anything is released:
        - the response's status is "completed" ("status"); its output is a list ("malformed_event");
        - each output item is a message (content a list, "malformed_event" otherwise, of
          output_text and refusal parts) or a function_call; any other item or part, reasoning
          included, is "unsupported_item";
        - each function_call: call_id non-empty and not repeated ("call_id"); its item id was
          streamed ("call_not_streamed"); its call_id, name and arguments equal the streamed ones
          byte for byte ("call_mismatch"); the tool is one of self.tools ("unknown_tool"); its
          arguments are JSON, an object with exactly the tool's parameter names, each value a
          string ("bad_arguments");
        - every streamed call appears in the output ("call_missing").
        Then return Message("assistant", joined output_text, ToolCall per function_call in output
        order with the parsed argument object, refusal=joined refusal text).
        """
        raise NotImplementedError("ResponseAssembly.accept: see sections 2.2 to 2.4 and 3 of `course show ag02`.")
{% endblock %}
