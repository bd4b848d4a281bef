{#- What the learner receives in place of each region of the reference (reference/go/ag01/go/agent/provider/sse.go, between `// course: begin NAME` and `// course: end NAME`); everything else comes from the reference as it is (course.regions). -#}
{% block imports %}
import (
	"io"

	"tinyllm/agent/types"
)
{% endblock %}
{% block EventReader_fields %}
	r io.Reader
	// your fields: a buffer of bytes read but not consumed, the pending event's data lines and
	// type, the last event ID, what the last line end was
{% endblock %}
{% block NewEventReader %}
	return &EventReader{r: r}
{% endblock %}
{% block EventReader_Next %}
	panic(`TODO ag01 §2.2: the next event's data`)
{% endblock %}
{% block EventReader_Type %}
	panic(`TODO ag01 §2.2: the last event's type`)
{% endblock %}
{% block EventReader_LastID %}
	panic(`TODO ag01 §2.2: the last event ID`)
{% endblock %}
{% block Decoder_fields %}
	// your fields: the open calls by index, the finish reason
{% endblock %}
{% block NewDecoder %}
	return &Decoder{}
{% endblock %}
{% block Decoder_Event %}
	panic(`TODO ag01 §2.2 and §3: the deltas of one event`)
{% endblock %}
{% block helpers %}
// Your own helpers go here.
{% endblock %}
