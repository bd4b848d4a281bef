{#- What the learner receives in place of each region of the reference (reference/go/ag02/go/agent/responses/assembly.go, between `// course: begin NAME` and `// course: end NAME`); everything else comes from the reference as it is (course.regions). -#}
{% block imports %}
// Add the imports your code needs here.
{% endblock %}
{% block Assembly_fields %}
	// your fields: the tools by name, the observer, the response's id, the calls buffered by item
	// id (and the order they came in), the preview characters so far, whether the response ended
{% endblock %}
{% block NewAssembly %}
	return &Assembly{}
{% endblock %}
{% block Assembly_Accept %}
	panic(`TODO ag02 §2.2 to §2.4: fold one event in`)
{% endblock %}
{% block Assembly_Pending %}
	panic(`TODO ag02 §2.2: how many calls are buffered`)
{% endblock %}
{% block helpers %}
// Your own helpers go here.
{% endblock %}
