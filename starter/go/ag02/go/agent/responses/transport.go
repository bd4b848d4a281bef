{#- What the learner receives in place of each region of the reference (reference/go/ag02/go/agent/responses/transport.go, between `// course: begin NAME` and `// course: end NAME`); everything else comes from the reference as it is (course.regions). -#}
{% block imports %}
import (
	"context"
	"net/http"
)
{% endblock %}
{% block HTTPTransport_Open %}
	panic(`TODO ag02 §4: POST the request and acquire its stream`)
{% endblock %}
{% block helpers %}
// Your own helpers go here.
{% endblock %}
