{#- What the learner receives in place of each region of the reference
    (reference/python/ag00/agent/contract/request.py, between `# course: begin NAME` and `# course: end NAME`);
    everything else comes from the reference as it is (course.regions). -#}
{% block build_request %}
    """The JSON body for ``POST /v1/responses``: model, instructions, question, tool, budget.

    Return a dict with exactly four keys:

    - ``"model"``: ``model``;
    - ``"input"``: two new messages, in this order:
      ``{"role": "developer", "content": DEVELOPER_INSTRUCTIONS}`` then
      ``{"role": "user", "content": question}`` (the question exactly as given, not stripped);
    - ``"tools"``: a list holding one deep copy of ``READ_ORDER_TOOL`` (``copy.deepcopy``), made
      for this request: editing any part of a request, however deep, never changes the module's
      tool or another request;
    - ``"max_output_tokens"``: ``max_output_tokens``.

    Raise ``ValueError`` when ``model`` or ``question`` is not a string, is empty, or holds only
    whitespace (spaces, tabs, newlines); any other text is accepted as it is, whatever its
    length or characters (``"ft:gpt-4o-mini:acme::abc123"`` is a model id). Raise it too when
    ``max_output_tokens`` is not a positive ``int``: 0, negative numbers, ``True``/``False``,
    floats (even ``500.0``), ``"500"`` and ``None`` are not budgets; 1 is the smallest one.
    """
    raise NotImplementedError("build_request: assemble the request body")
{% endblock %}
