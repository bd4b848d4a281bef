{#- What the learner receives in place of each region of the reference (reference/go/ag01/go/agent/types/types.go, between `// course: begin NAME` and `// course: end NAME`); everything else comes from the reference as it is (course.regions). -#}
{% block imports %}
import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
)

// ---- Messages and tools ---------------------------------------------------------------------
{% endblock %}
{% block IsContent %}
	panic(`TODO ag01 §2.1: true for text and the three tool-call deltas`)
{% endblock %}
{% block Accumulator_fields %}
	// your fields: the text so far, the finished calls by index, the last usage, the finish
	// reason, whether a DoneDelta came, the first error
{% endblock %}
{% block Accumulator_Add %}
	panic(`TODO ag01 §2.1: fold one delta in`)
{% endblock %}
{% block Accumulator_Message %}
	panic(`TODO ag01 §2.1: the assistant message, calls sorted by index, missing arguments {}`)
{% endblock %}
{% block Accumulator_Usage %}
	panic(`TODO ag01 §2.1: the last UsageDelta`)
{% endblock %}
{% block Accumulator_FinishReason %}
	panic(`TODO ag01 §2.1: the DoneDelta's finish reason`)
{% endblock %}
{% block Accumulator_Err %}
	panic(`TODO ag01 §2.1: the first ErrorDelta's error, else ErrIncomplete without a DoneDelta`)
{% endblock %}
{% block Collect %}
	panic(`TODO ag01 §2.1: read ch to its end through an Accumulator`)
{% endblock %}
{% block WithCallContext %}
	panic(`TODO ag01 §2.4: attach cc to ctx`)
{% endblock %}
{% block CallContextFrom %}
	panic(`TODO ag01 §2.4: the attached CallContext; Tainted when none is`)
{% endblock %}
{% block Direct_RunStep %}
	panic(`TODO ag01 §2.4: just call fn`)
{% endblock %}
{% block LLMStep %}
	panic(`TODO ag01 §2.4: "llm/<iter>"`)
{% endblock %}
{% block ToolStep %}
	panic(`TODO ag01 §2.4: "tool/<iter>/<i>/<name>"`)
{% endblock %}
{% block StepToolName %}
	panic(`TODO ag01 §2.4: the name after tool/<iter>/<i>/, digits only in iter and i`)
{% endblock %}
{% block helpers %}
// Your own helpers go here.
{% endblock %}
