{#- What the learner receives in place of each region of the reference
    (reference/python/ag03/agent/proxy/state.py, between `# course: begin NAME` and `# course: end NAME`);
    everything else comes from the reference as it is (course.regions). -#}
{% block module %}
The final statements (each done event, the completed response) are checked against what was streamed,
and anything the state does not understand ends the stream with FailClosed (see errors.py for its codes).
{% endblock %}
{% block FunctionCall %}
    """One function call of a response, as the stream built it.

    ``fragments`` are the argument deltas in arrival order (``streamed`` joins them). ``arguments``
    is None until the call's ``response.function_call_arguments.done`` arrives; then it holds the
    arguments that event states. They are the authority, and they are checked: they must equal the
    joined fragments, or the stream fails closed ("mismatch"), since a fragment was lost, repeated or
    changed on the way and neither side can be trusted with a tool.
    """

{% endblock %}
{% block FunctionCall_2 %}
    fragments: list[str] = field(default_factory=list)
    streamed_chars: int = 0
    arguments: str | None = None
{% endblock %}
{% block FunctionCall_parsed_arguments %}
        """The final arguments as a JSON object; FailClosed("bad_arguments") when they are not one."""
{% endblock %}
{% block Turn %}
    """A complete upstream response: its metadata (id, model, created_at, status, usage as the
    completed response states them), its output text and refusal, and the calls it asks for in
    output order. tools, tool_choice and parallel_tool_calls are what the response echoes of its
    request: finish() leaves them at their defaults, the policies set them from the client's request."""
{% endblock %}
{% block module_2 %}
{% endblock %}
{% block StreamState %}
    def __init__(self) -> None:
        # Your state: the response that was created, the calls by item id, the text, the last
        # sequence number, the terminal response once it arrives. Section "Buffering by item".
        pass
{% endblock %}
{% block StreamState_feed %}
        """Take one event (a parsed JSON object with a "type"). Raise FailClosed as soon as the
        stream cannot be trusted:

        - an event's ``sequence_number``, when present, must be larger than the last one seen
          (a repeat or a step back is "protocol");
        - an ``error`` event is "upstream_error", its message kept whether the fields are at the
          top level or nested under "error";
        - the first event must be ``response.created`` with a response id ("protocol" otherwise);
          nothing may follow the terminal ``response.completed`` ("protocol");
        - ``response.output_item.added`` with a ``function_call`` item opens a call (item id,
          call_id and name all non-empty; an item id or a call_id opened twice, even under
          another item id, is "protocol"; a ninth call is "limit"). Other item types are
          progress only;
        - ``response.function_call_arguments.delta`` appends to the call its ``item_id`` names
          (an unknown item, or a call already closed, is "protocol"); ``.done`` closes the call
          with the ``arguments`` it states, which must equal the joined fragments ("mismatch",
          also when no fragment came; "protocol" when it states none). Over MAX_ARGUMENT_CHARS,
          streamed or stated, is "limit";
        - ``response.output_item.done`` of a function call restates the call: the call must have
          been added and closed by its done event ("protocol"), and the item must name its
          call_id and name and, when it states arguments, the call's arguments ("mismatch");
        - ``response.output_text.delta`` and ``response.refusal.delta`` add to the text and the
          refusal of their part (item_id, content_index); a delta that is not a string is
          "protocol"; text and refusal together over MAX_TEXT_CHARS is "limit";
          ``response.output_text.done`` (``text``) and ``response.refusal.done`` (``refusal``)
          state their part whole: it must equal the part's deltas ("mismatch"); a done event
          without it leaves the deltas standing;
        - every event after created that carries a ``response`` object, or a ``response_id``,
          must name the response that was created ("protocol"); a second ``response.created``
          is "protocol";
        - ``response.completed`` must have status completed; ``response.failed`` is
          "upstream_failed" (its error message kept) and ``response.incomplete`` is
          "upstream_incomplete" (its reason in the message);
        - every other event type is progress: observe it, change nothing.
        """
        raise NotImplementedError("StreamState.feed: section 'Buffering by item'")
{% endblock %}
{% block StreamState_finish %}
        """What the stream amounts to, once it ended. Raise FailClosed:

        - "missing_terminal" when response.completed never arrived, even if every call looks done;
        - "incomplete_call" when a call was never closed by its arguments.done event;
        - "mismatch" when the completed response's ``output`` lists function calls other than the
          streamed ones (another call_id, name or arguments, or a streamed call left out), or
          when its message items' output_text parts (joined) or refusal parts (joined) differ
          from the text and the refusal that streamed. A completed response without an
          ``output`` key keeps what streamed.

        Otherwise return the Turn: the completed response's id, model, created_at and usage, the
        output text and the refusal (every part's deltas, joined in the order the parts began),
        and the calls sorted by output_index.
        """
        raise NotImplementedError("StreamState.finish: section 'Progress is not permission'")
{% endblock %}
