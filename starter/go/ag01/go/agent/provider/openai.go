{#- What the learner receives in place of each region of the reference (reference/go/ag01/go/agent/provider/openai.go, between `// course: begin NAME` and `// course: end NAME`); everything else comes from the reference as it is (course.regions). -#}
{% block imports %}
import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"tinyllm/agent/types"
)
{% endblock %}
{% block OpenAI_ChatStream %}
	panic(`TODO ag01 §2.2 and §4: send the request, stream its deltas on a channel you close`)
{% endblock %}
{% block RequestBody %}
	panic(`TODO ag01 §4: the request body`)
{% endblock %}
{% block helpers %}
// Your own helpers go here.
{% endblock %}
