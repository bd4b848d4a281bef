{#- What the learner receives in place of each region of the reference
    (reference/python/ag01/agent/types.py, between `# course: begin NAME` and `# course: end NAME`);
    everything else comes from the reference as it is (course.regions). -#}
{% block docstring %}
"""The agent's vocabulary: messages, tool calls, streamed deltas, and the seams later chapters plug into.

The data types are given. What is left for you: `is_content`, `Accumulator`, `collect`, the
`Verdict` constructors, `current_call_context`, `call_context`, `Direct.run_step` and the
step names. Sections 2.1 and 2.4 of `course show ag01` explain them.
"""
{% endblock %}
{% block is_content %}

def is_content(delta: Delta) -> bool:
    """Return True for the deltas a caller shows or acts on, False for the others.

    Content deltas: TextDelta, ToolCallStartDelta, ToolCallArgsDelta, ToolCallEndDelta.
    Not content: UsageDelta, ErrorDelta, DoneDelta. The retry wrapper uses this to find the
    commitment boundary (section 2.3).
    """
    raise NotImplementedError("is_content: which deltas are content? See section 2.1 of `course show ag01`.")


# --- Folding a stream back into one message ------------------------------------------------------------
{% endblock %}
{% block Accumulator__init__ %}
        """Set up what you need to remember: the text pieces so far, the finished tool calls by
        index, the last usage, the finish reason, whether a DoneDelta came, and the first error.
        """
        raise NotImplementedError("Accumulator: choose its state. See section 2.1 of `course show ag01`.")
{% endblock %}
{% block Accumulator_add %}
        """Take in one delta.

        - TextDelta: remember its text (all texts are joined, in order, by message()).
        - ToolCallEndDelta: remember its call under its index.
        - UsageDelta: it replaces any earlier usage.
        - DoneDelta: remember that it came, and its finish_reason.
        - ErrorDelta: remember its error (the first one, if there were several).
        - ToolCallStartDelta and ToolCallArgsDelta: nothing to do, the end delta carries the call.
        """
        raise NotImplementedError("Accumulator.add: see its docstring and `course show ag01`.")
{% endblock %}
{% block Accumulator_message %}
        """Return the assistant message so far.

        Role ASSISTANT; content = every text joined in order ("" when none); tool_calls = the
        calls of the ToolCallEndDeltas sorted by index (not by the order they ended in), each
        with arguments "{}" when its arguments are empty.
        """
        raise NotImplementedError("Accumulator.message: see its docstring and `course show ag01`.")
{% endblock %}
{% block Accumulator_usage %}
        """Return the last UsageDelta as a Usage, or Usage() (zeros) when none came."""
        raise NotImplementedError("Accumulator.usage: see its docstring and `course show ag01`.")
{% endblock %}
{% block Accumulator_finish_reason %}
        """Why the model stopped: the DoneDelta's finish_reason, or "" before any DoneDelta."""
        raise NotImplementedError("Accumulator.finish_reason: see its docstring and `course show ag01`.")
{% endblock %}
{% block Accumulator_error %}
        """Why the stream failed, or None.

        The error of the ErrorDelta if one was added; otherwise an IncompleteStreamError() if no
        DoneDelta was added; otherwise None.
        """
        raise NotImplementedError("Accumulator.error: see its docstring and `course show ag01`.")
{% endblock %}
{% block collect %}
    """Read a whole stream and return (message, usage).

    Fold every delta into an Accumulator; if its `error` is not None, raise that error;
    otherwise return its message() and usage().
    """
    raise NotImplementedError("collect: fold with an Accumulator. See section 2.1 of `course show ag01`.")
{% endblock %}
{% block Verdict_allow %}
        """Return a Verdict with decision ALLOW (no reason, no marker)."""
        raise NotImplementedError("Verdict.allow: see section 2.4 of `course show ag01`.")
{% endblock %}
{% block Verdict_deny %}
        """Return a Verdict with decision DENY and this reason."""
        raise NotImplementedError("Verdict.deny: see section 2.4 of `course show ag01`.")
{% endblock %}
{% block Verdict_need_approval %}
        """Return a Verdict with decision NEED_APPROVAL and this marker."""
        raise NotImplementedError("Verdict.need_approval: see section 2.4 of `course show ag01`.")
{% endblock %}
{% block current_call_context %}
    """Return the CallContext set by the enclosing `call_context` block.

    When none is set, return CallContext(tainted=True), not CallContext(): a gate called without
    context must assume the conversation saw untrusted input. (ContextVar.get takes a default.)
    """
    raise NotImplementedError("current_call_context: see section 2.4 of `course show ag01`.")
{% endblock %}
{% block call_context %}
    """Make `cc` the current call context inside a `with call_context(cc):` block.

    Set the ContextVar, yield `cc`, and restore the previous value when the block ends, even
    when it ends with an exception (ContextVar.set returns a token for ContextVar.reset).
    """
    raise NotImplementedError("call_context: see section 2.4 of `course show ag01`.")
{% endblock %}
{% block Direct_run_step %}
        """Call fn() and return what it returns (name and kind are not used)."""
        raise NotImplementedError("Direct.run_step: see section 2.4 of `course show ag01`.")
{% endblock %}
{% block llm_step %}
    """The step name of the model call of iteration `iter`: llm_step(3) == "llm/3"."""
    raise NotImplementedError("llm_step: see section 2.4 of `course show ag01`.")
{% endblock %}
{% block tool_step %}
    """The step name of the `i`-th tool call of iteration `iter`: tool_step(3, 0, "get_weather") == "tool/3/0/get_weather"."""
    raise NotImplementedError("tool_step: see section 2.4 of `course show ag01`.")
{% endblock %}
{% block step_tool_name %}
    """Return the tool name of a tool step's name, or None when `step` is not one.

    "tool/3/0/get_weather" gives "get_weather". The name is everything after the third "/", so
    "tool/3/0/fs/read" gives "fs/read". Return None for an llm step, for anything that does not
    start with "tool/", for fewer than four parts, for an empty name, and when the iteration or
    the index is not made of the digits 0-9 ("tool/x/0/get_weather" is not a tool step).
    """
    raise NotImplementedError("step_tool_name: see section 2.4 of `course show ag01`.")
{% endblock %}
