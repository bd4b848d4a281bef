{#- What the learner receives in place of each region of the reference
    (reference/python/ag00/agent/contract/request.py, between `# course: begin NAME` and `# course: end NAME`);
    everything else comes from the reference as it is (course.regions). -#}
{% block build_request %}
    """The JSON body for ``POST /v1/responses``: model, instructions, question, tool, budget.

    Return a dict with exactly four keys:

    - ``"model"``: ``model``;
    - ``"input"``: two messages, in this order:
      ``{"role": "developer", "content": DEVELOPER_INSTRUCTIONS}`` then
      ``{"role": "user", "content": question}``;
    - ``"tools"``: a list holding one *copy* of ``READ_ORDER_TOOL`` (``copy.deepcopy``),
      so that editing the request never edits the module's tool;
    - ``"max_output_tokens"``: ``max_output_tokens``.

    Raise ``ValueError`` when ``model`` or ``question`` is empty or only blanks, or
    when ``max_output_tokens`` is not a positive ``int`` (``True`` and ``"500"`` are
    not budgets).
    """
    raise NotImplementedError("build_request: assemble the request body")
{% endblock %}
