{#- What the learner receives in place of each region of the reference
    (reference/python/ag01/agent/provider/openai.py, between `# course: begin NAME` and `# course: end NAME`);
    everything else comes from the reference as it is (course.regions). -#}
{% block docstring %}
"""A Provider for any server that speaks the OpenAI chat-completions API with streaming.

`Config` is given; `request_body` and `OpenAIProvider.chat_stream` are yours (sections 2.1,
4 and 7 of `course show ag01`). Use http.client, from the standard library.
The imports below are the ones the reference solution uses; add or drop any.
"""
{% endblock %}
{% block request_body %}
    """Return the JSON body (a dict) of a streamed chat-completions request.

    - Always: "model", "messages", "stream": True, "stream_options": {"include_usage": True}
      (without that option most servers never send the usage chunk).
    - "tools" only when there are some, each {"type": "function", "function": {"name": ...,
      "description": ..., "parameters": ...}}.
    - "temperature" and "max_tokens" only when options sets them (not None).
    - The body shares no nested object with the arguments: changing it, at any depth, must not
      change a ToolDef's parameters (copy them, e.g. with copy.deepcopy), nor the other way round.
    - Each message: {"role": "user", "content": "..."} (the role's string value), plus:
      * with tool calls: "tool_calls": [{"id": ..., "type": "function", "function": {"name": ...,
        "arguments": ...}}], where arguments is the JSON *string* ("{}" when it is ""), and
        "content": None (null) when the content is "";
      * "tool_call_id" when it is set (tool messages);
      * "name" only when it is not "".
    """
    raise NotImplementedError("request_body: see its docstring and section 4 of `course show ag01`.")
{% endblock %}
{% block OpenAIProvider__init__ %}
        """Raise ValueError when config.base_url is not an http or https URL with a host."""
        self._config = config
        # you may prepare more here, e.g. the host, port and path taken from config.base_url
{% endblock %}
{% block OpenAIProvider_chat_stream %}
        """Send the request, then return the stream of deltas.

        Before returning (so these are raised to the caller):
        - open an http.client.HTTPConnection (HTTPSConnection for https) to the host and port
          of config.base_url, with timeout=config.timeout;
        - POST to the path of base_url + "/chat/completions" (a "/" ending base_url is not doubled)
          the JSON of request_body(config.model, ...), with headers Content-Type:
          application/json, Accept: text/event-stream, Authorization: Bearer <api_key> (only when
          api_key is set), and config.headers last (a header there replaces ours of that name,
          whatever its case: header names ignore case, and each header goes out once);
        - if the status is not 2xx (anything outside 200-299, 3xx included): read the body and
          raise APIError(status, type, code, message, retry_after) from its {"error": {...}}.
          The body may not be JSON at all: without an error object the message is the body's
          text, stripped (the status line's reason when the body is empty). retry_after = the
          Retry-After header as seconds (float, fractions allowed), None when absent or not a
          finite number >= 0 (a date, "inf", "-1"). Close the connection first. Errors while
          connecting (OSError) just propagate.

        The stream then reads the body with EventReader and Decoder and yields every delta:
        - it stops after the Decoder says the stream is finished;
        - when the body ends before that: yield ErrorDelta(StreamCutError());
        - when reading fails (OSError, a TimeoutError after config.timeout seconds without a byte,
          or http.client.HTTPException such as IncompleteRead for a chunk cut short or malformed):
          yield ErrorDelta(that error); nothing is ever raised once the stream has started;
        - when it ends, and when the caller calls its close(), even before reading anything, it
          closes the response AND the connection: that is what tells the server to stop (section 7).
        Careful: a generator closed before its first step never runs its `finally`. A small class
        with __iter__, __next__ and close() around the generator is one way to close in every case.
        Tip: response.read(n) waits for n bytes; response.read1(n) returns what has arrived.
        """
        raise NotImplementedError("OpenAIProvider.chat_stream: see its docstring and `course show ag01`.")
{% endblock %}
