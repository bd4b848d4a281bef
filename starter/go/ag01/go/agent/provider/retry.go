{#- What the learner receives in place of each region of the reference (reference/go/ag01/go/agent/provider/retry.go, between `// course: begin NAME` and `// course: end NAME`); everything else comes from the reference as it is (course.regions). -#}
{% block imports %}
import (
	"context"
	"time"

	"tinyllm/agent/types"
)
{% endblock %}
{% block RetryPolicy_Delay %}
	panic(`TODO ag01 §2.3: the wait after failure n`)
{% endblock %}
{% block Retryable %}
	panic(`TODO ag01 §2.3: which failures a retry could cure`)
{% endblock %}
{% block WithRetry %}
	panic(`TODO ag01 §2.3: the retrying provider`)
{% endblock %}
{% block helpers %}
// Your own helpers go here.
{% endblock %}
