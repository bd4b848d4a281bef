{#- What the learner receives in place of each region of the reference (reference/go/ag00/go/agent/contract/classify.go, between `// course: begin NAME` and `// course: end NAME`); everything else comes from the reference as it is (course.regions). -#}
{% block imports %}
import "encoding/json"

{% endblock %}
{% block IsRetryable %}
	panic(`TODO ag00, "Reading the HTTP status": which statuses may pass later`)
{% endblock %}
{% block Classify %}
	panic(`TODO ag00, "Reading the HTTP status" and "Reading the body": one Kind for the reply`)
{% endblock %}
{% block helpers %}
// Your own helpers go here.
{% endblock %}
