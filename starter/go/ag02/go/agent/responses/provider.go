{#- What the learner receives in place of each region of the reference (reference/go/ag02/go/agent/responses/provider.go, between `// course: begin NAME` and `// course: end NAME`); everything else comes from the reference as it is (course.regions). -#}
{% block imports %}
import (
	"context"
	"time"
)
{% endblock %}
{% block Retryable %}
	panic(`TODO ag02 §2.5: which failures to open may be tried again`)
{% endblock %}
{% block Provider_Complete %}
	panic(`TODO ag02 §2.5 and §2.6: open with retries, consume one stream, close it`)
{% endblock %}
{% block helpers %}
// Your own helpers go here.
{% endblock %}
