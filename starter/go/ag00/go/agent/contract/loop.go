{#- What the learner receives in place of each region of the reference (reference/go/ag00/go/agent/contract/loop.go, between `// course: begin NAME` and `// course: end NAME`); everything else comes from the reference as it is (course.regions). -#}
{% block imports %}
import (
	"context"
	"encoding/json"
)

{% endblock %}
{% block FunctionCallOutput %}
	panic(`TODO ag00, "call_id links a call to its result": the function_call_output item`)
{% endblock %}
{% block Loop_Run %}
	panic(`TODO ag00, "Running the loop": bounded turns, whole batches, verified answers`)
{% endblock %}
{% block helpers %}
// Your own helpers go here.
{% endblock %}
