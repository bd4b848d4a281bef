{#- What the learner receives in place of each region of the reference (reference/go/ag03/go/agent/proxy/synthesize.go, between `// course: begin NAME` and `// course: end NAME`); everything else comes from the reference as it is (course.regions). -#}
{% block imports %}
import (
	"encoding/json"
)

{% endblock %}
{% block EventWriter_Event %}
	panic(`TODO ag03 "Synthesize, do not forward": EventWriter.Event`)
{% endblock %}
{% block MessageItem %}
	panic(`TODO ag03 "Synthesize, do not forward" and "A refusal is an answer": MessageItem`)
{% endblock %}
{% block ToJSON %}
	panic(`TODO ag03 "Synthesize, do not forward": ToJSON`)
{% endblock %}
{% block Opening %}
	panic(`TODO ag03 "Synthesize, do not forward": Opening`)
{% endblock %}
{% block TextPartOpening %}
	panic(`TODO ag03 "Synthesize, do not forward": TextPartOpening`)
{% endblock %}
{% block TextDelta %}
	panic(`TODO ag03 "Synthesize, do not forward": TextDelta`)
{% endblock %}
{% block Closing %}
	panic(`TODO ag03 "Synthesize, do not forward" and "A refusal is an answer": Closing`)
{% endblock %}
{% block Failed %}
	panic(`TODO ag03 "One response, whatever the mode": Failed`)
{% endblock %}
{% block ToSSE %}
	panic(`TODO ag03 "Synthesize, do not forward": ToSSE`)
{% endblock %}
{% block helpers %}
// Your own helpers go here.
{% endblock %}
