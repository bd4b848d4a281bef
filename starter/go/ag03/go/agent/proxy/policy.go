{#- What the learner receives in place of each region of the reference (reference/go/ag03/go/agent/proxy/policy.go, between `// course: begin NAME` and `// course: end NAME`); everything else comes from the reference as it is (course.regions). -#}
{% block imports %}
import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

{% endblock %}
{% block Proxy_Handle %}
	panic(`TODO ag03 "Fail closed, and say why" and "Never twice": Proxy.Handle`)
{% endblock %}
{% block PassThrough %}
	panic(`TODO ag03 "Pass-through means the same bytes": PassThrough`)
{% endblock %}
{% block Proxy_BufferedFinalStream %}
	panic(`TODO ag03 "Progress is not permission" and "One batch, one decision": Proxy.BufferedFinalStream`)
{% endblock %}
{% block Proxy_ProgressEvents %}
	panic(`TODO ag03 "Progress mode": Proxy.ProgressEvents`)
{% endblock %}
{% block OneTurn %}
	panic(`TODO ag03 "Closing is part of finishing": OneTurn`)
{% endblock %}
{% block Continued %}
	panic(`TODO ag03 "Never twice": Continued`)
{% endblock %}
{% block RunCalls %}
	panic(`TODO ag03 "One batch, one decision": RunCalls`)
{% endblock %}
{% block Downstream %}
	panic(`TODO ag03 "One response, whatever the mode": Downstream`)
{% endblock %}
{% block helpers %}
// Your own helpers go here.
{% endblock %}
