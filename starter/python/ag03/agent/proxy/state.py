{#- What the learner receives in place of each region of the reference
    (reference/python/ag03/agent/proxy/state.py, between `# course: begin NAME` and `# course: end NAME`);
    everything else comes from the reference as it is (course.regions). -#}
{% block module %}
Anything the state does not understand ends the stream with FailClosed (see errors.py for its codes).
{% endblock %}
{% block FunctionCall %}
    """One function call of a response, as the stream built it.

    ``fragments`` are the argument deltas in arrival order (``streamed`` joins them). ``arguments``
    is None until the call's ``response.function_call_arguments.done`` arrives; then it holds the
    arguments that event states, which are authoritative: where they differ from the deltas (a
    fragment lost or repeated on the way), the done event wins and ``corrected`` is True.
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
    completed response states them), its output text, and the calls it asks for in output order."""
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
          call_id and name all non-empty; an item id or call_id opened twice is "protocol"; a
          ninth call is "limit"). Other item types are progress only;
        - ``response.function_call_arguments.delta`` appends to the call its ``item_id`` names
          (an unknown item, or a call already closed, is "protocol"); ``.done`` closes the call
          with the ``arguments`` it states. Over MAX_ARGUMENT_CHARS, streamed or stated, is "limit";
        - ``response.output_text.delta`` adds to the text (over MAX_TEXT_CHARS is "limit");
          ``response.output_text.done`` states that part's text, which wins over its deltas;
        - ``response.completed`` must name the response id that was created and have status
          completed; ``response.failed`` is "upstream_failed" (its error message kept) and
          ``response.incomplete`` is "upstream_incomplete" (its reason in the message);
        - every other event type is progress: observe it, change nothing.
        """
        raise NotImplementedError("StreamState.feed: section 'Buffering by item'")
{% endblock %}
{% block StreamState_finish %}
        """What the stream amounts to, once it ended. Raise FailClosed:

        - "missing_terminal" when response.completed never arrived, even if every call looks done;
        - "incomplete_call" when a call was never closed by its arguments.done event;
        - "mismatch" when the completed response's ``output`` lists function calls other than the
          streamed ones (another call_id, name or arguments, or a streamed call left out). A
          completed response without an ``output`` key keeps the streamed calls.

        Otherwise return the Turn: the completed response's id, model, created_at and usage, the
        output text (each part's done text, or its deltas when it has none), and the calls sorted
        by output_index.
        """
        raise NotImplementedError("StreamState.finish: section 'Progress is not permission'")
{% endblock %}
