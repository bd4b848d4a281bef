{#- What the learner receives in place of each region of the reference (reference/go/ag03/go/agent/proxy/state.go, between `// course: begin NAME` and `// course: end NAME`); everything else comes from the reference as it is (course.regions). -#}
{% block imports %}
import (
	"encoding/json"
	"strings"
)

{% endblock %}
{% block FunctionCall %}
	// your own fields, if you need any (unexported: the tests never see them)
{% endblock %}
{% block StreamState %}
	// Your state: the response created, the calls in the order they opened, the text and refusal
	// deltas by part, the last sequence number, the completed response once it arrives.
	// "Buffering by item" and "Bookkeeping" say what it must remember.
{% endblock %}
{% block NewStreamState %}
	return &StreamState{}
{% endblock %}
{% block StreamState_Feed %}
	panic(`TODO ag03 "Buffering by item", "The final statements are checked", "Bookkeeping": StreamState.Feed`)
{% endblock %}
{% block StreamState_Finish %}
	panic(`TODO ag03 "Progress is not permission": StreamState.Finish`)
{% endblock %}
{% block helpers %}
// Your own helpers go here.
{% endblock %}
