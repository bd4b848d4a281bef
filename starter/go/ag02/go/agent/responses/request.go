{#- What the learner receives in place of each region of the reference (reference/go/ag02/go/agent/responses/request.go, between `// course: begin NAME` and `// course: end NAME`); everything else comes from the reference as it is (course.regions). -#}
{% block imports %}
// Add the imports your code needs here.
{% endblock %}
{% block BuildRequest %}
	panic(`TODO ag02 §2.1: the history and the tools as one request`)
{% endblock %}
{% block helpers %}
// Your own helpers go here.
{% endblock %}
