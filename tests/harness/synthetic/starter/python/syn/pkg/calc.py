{#- What the learner receives in place of each region of reference/python/syn/pkg/calc.py. -#}
{% block add %}
    raise NotImplementedError("add: see `course show {{ chapter.id }}`")
{% endblock %}
{% block total %}
    raise NotImplementedError("total: start at zero, add each number")
{% endblock %}
