{#- What the learner receives in place of each region of the reference (reference/go/ag00/go/agent/contract/request.go, between `// course: begin NAME` and `// course: end NAME`); everything else comes from the reference as it is (course.regions). -#}
{% block imports %}
import (
	"encoding/json"
	"errors"
)

{% endblock %}
{% block BuildRequest %}
	panic(`TODO ag00, "Building the request": check the model, the question and the budget, then build the body`)
{% endblock %}
{% block helpers %}
// Your own helpers go here.
{% endblock %}
