{#- What the learner receives in place of each region of the reference (reference/go/ag00/go/agent/contract/orders.go, between `// course: begin NAME` and `// course: end NAME`); everything else comes from the reference as it is (course.regions). -#}
{% block imports %}
{% endblock %}
{% block ExecuteCall %}
	panic(`TODO ag00, "Running the read": the name, the arguments, then ownership`)
{% endblock %}
{% block helpers %}
// Your own helpers go here.
{% endblock %}
