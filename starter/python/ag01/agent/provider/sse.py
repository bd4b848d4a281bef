{#- What the learner receives in place of each region of the reference
    (reference/python/ag01/agent/provider/sse.py, between `# course: begin NAME` and `# course: end NAME`);
    everything else comes from the reference as it is (course.regions). -#}
{% block docstring %}
"""Server-sent events: the bytes of a streamed answer turned into events, and events into deltas.

`Event` is given; `EventReader` and `Decoder` are yours. Section 2.2 of `course show ag01` lists
the rules, section 3 walks through two streams by hand.
The imports below are the ones the reference solution uses; add or drop any.
"""
{% endblock %}
{% block EventReader %}
    """Iterates over the events of a text/event-stream body (WHATWG HTML, "server-sent events")."""
{% endblock %}
{% block EventReader__init__ %}
        # add the state you need here, or keep it in local variables of a generator
{% endblock %}
{% block EventReader__iter__ %}
        """Yield the events of the stream, in order, reading it with self._stream.read(self._read_size).

        A generator method (a `def` with `yield`) is the simplest way. Its state must survive
        from one read to the next, because a read can end anywhere: inside a line, inside a
        UTF-8 character, between the CR and the LF of one line end.

        - Decode with codecs.getincrementaldecoder (the "utf-8-sig" codec also drops one leading
          BOM) with errors="replace": bytes that are not valid UTF-8 become U+FFFD, never an
          exception. Never bytes.decode() on each read.
        - A line ends at "\\r\\n", "\\n" or a lone "\\r"; a "\\r" at the end of one read followed by
          "\\n" at the start of the next is ONE line end. Whatever remembers "the last read ended
          in \\r" must be cleared once the next read is seen, even a read that held only that
          "\\n". Do not use str.splitlines().
        - A blank line dispatches the event, if its data list is not empty: yield
          Event(data lines joined with "\\n", the event field or "message", the last id).
          Then clear the data and the event field (the last id stays for later events).
        - A line starting with ":" is a comment. Otherwise split at the first ":" into field and
          value and remove ONE leading space from the value; a line without ":" is a field with
          an empty value. Fields: "data" appends the value, "event" sets the type, "id" sets the
          last id unless the value contains "\\0"; any other field is ignored.
        - At the end of the input (read returns b""), an event without its blank line is dropped.
        - Stay linear: keep pieces of an unfinished line in a list and join them once, when the
          line ends; never rebuild a growing buffer with buf = buf + chunk.
        """
        raise NotImplementedError("EventReader: see its docstring and section 2.2 of `course show ag01`.")
{% endblock %}
{% block Decoder %}
    """Turns the data of each chat-completions stream event into deltas."""
{% endblock %}
{% block Decoder__init__ %}
        """Set up your state: the tool calls still open, keyed by their index (each with its id,
        name and argument fragments so far), and the finish_reason seen so far ("")."""
        raise NotImplementedError("Decoder: choose its state. See section 3 of `course show ag01`.")
{% endblock %}
{% block Decoder_decode %}
        """Return the deltas of one event's data, and True when the stream is finished.

        - "[DONE]": close every open call (below), then DoneDelta(the finish_reason seen so far,
          "" if none); finished.
        - Data that is not valid JSON: [ErrorDelta(ProviderError("invalid JSON in stream event: ..."))];
          finished. The same (an ErrorDelta holding a ProviderError; finished) for JSON that is not
          an object, and for an object of the wrong shape (e.g. "choices": 5, or a delta that is
          not an object).
        - A JSON object with an "error" key, e.g. {"error": {"type": ..., "code": ..., "message": ...}}:
          [ErrorDelta(StreamError(type, code, message))]; finished. An error that is a plain
          string becomes StreamError(message=that string).
        - Otherwise a chunk; not finished. A field that is null counts as absent (real chunks
          carry "content": null, "usage": null, "logprobs": null ...). Only the choice with index
          0 counts (other choices are other answers); for it, in this order:
          * delta.content, when it is a NON-EMPTY string: TextDelta(content);
          * each entry of delta.tool_calls, by its "index": the first time an index is seen,
            ToolCallStartDelta(index, id, function.name) (later entries of the same index may
            repeat id and name: they start nothing); then, when function.arguments is a
            non-empty string, append it to THAT index's fragments and emit
            ToolCallArgsDelta(index, fragment);
          * a non-null finish_reason, whatever it is ("stop", "tool_calls", "length" ...):
            remember it, and close every open call.
          Then, when the chunk has a "usage" object (it usually comes with "choices": []):
          UsageDelta(usage.prompt_tokens, usage.completion_tokens); total_tokens may be missing.
        - Closing the open calls: one ToolCallEndDelta(index, ToolCall(id, name, arguments)) per
          open call, lowest index first, arguments = its fragments joined or "{}" when none
          came; afterwards no call is open.
        """
        raise NotImplementedError("Decoder.decode: see its docstring and section 3 of `course show ag01`.")
{% endblock %}
