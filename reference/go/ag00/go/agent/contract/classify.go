package contract

// course: begin imports
import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// course: end imports
// A Kind is what one reply turned out to be. Exactly one applies.
type Kind string

const (
	HTTPError       Kind = "http_error"        // any HTTP status but 200
	Incomplete      Kind = "incomplete"        // generation stopped early (a budget, a filter)
	Failed          Kind = "failed"            // generation failed on the server's side
	Cancelled       Kind = "cancelled"         // generation was cancelled
	Refused         Kind = "refused"           // the model declined
	ToolRequests    Kind = "tool_requests"     // the model asks for calls
	Text            Kind = "text"              // the model answered in text
	Empty           Kind = "empty"             // a finished reply with nothing to act on or show
	Unsupported     Kind = "unsupported"       // a shape this chapter does not vouch for
	InvalidToolCall Kind = "invalid_tool_call" // a call that cannot be answered or run
)

// A Call is one function_call item of a reply: the model proposing to run a tool. Its fields are
// the item's, exactly as they came: Classify checks that CallID, Name and Arguments are non-empty
// strings, and nothing more about them.
type Call struct {
	ID        string // the item's own id (fc_...): no result ever answers it
	CallID    string // what the result of this call must repeat
	Name      string
	Arguments string // JSON text as the model wrote it, not yet parsed
}

// A Verdict is the classification of one reply.
type Verdict struct {
	Kind      Kind
	Retryable bool   // HTTPError only: may the same request succeed if sent again later?
	Reason    string // the incomplete reason, the error code, the refusal or what was unsupported; "" for none
	Calls     []Call // ToolRequests: the function_call items, in output order
	Text      string // Text: every output_text part, joined with nothing between them
	// Output is, for ToolRequests, every output item exactly as received: the next request
	// repeats them.
	Output []json.RawMessage
}

// IsRetryable reports whether an HTTP error may pass if the same request is sent again later: 408
// (the request came too slowly), 429 (slow down), 500, 502, 503 and 504 (trouble on the way or on
// the server). Any other status (409, 501, 505 to 599 included) fails the same way every time.
func IsRetryable(statusCode int) bool {
	// course: begin IsRetryable
	switch statusCode {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
	// course: end IsRetryable
}

// Classify sorts the reply received with statusCode and body into exactly one Kind. It reads three
// statuses in turn, each only once the one before said yes: the HTTP status (did the server
// answer?), the reply's own "status" (did generation finish?), then the output items (what did the
// model produce?). None of them says the task is done; the loop decides that against receipts.
// Only the shapes this chapter shows are accepted: anything else is Unsupported.
func Classify(statusCode int, body []byte) Verdict {
	// course: begin Classify
	fields, isObject := object(body)
	if statusCode != http.StatusOK {
		return Verdict{Kind: HTTPError, Retryable: IsRetryable(statusCode), Reason: errorCode(fields)}
	}
	if !isObject {
		return unsupported("the body is not a JSON object")
	}
	// The generation status comes before the items: a cut reply may hold partial text that reads
	// like an answer, or a call that looks whole.
	switch status, _ := text(fields["status"]); status {
	case "completed":
		return classifyOutput(fields["output"])
	case "incomplete":
		details, _ := object(fields["incomplete_details"])
		reason, _ := text(details["reason"])
		return Verdict{Kind: Incomplete, Reason: reason}
	case "failed":
		return Verdict{Kind: Failed, Reason: errorCode(fields)}
	case "cancelled":
		return Verdict{Kind: Cancelled}
	default:
		return unsupported(fmt.Sprintf("response status %q", status))
	}
	// course: end Classify
}

// course: begin helpers
// classifyOutput walks the output items in order. The first item that settles the matter (a
// refusal, a malformed call, a shape the chapter does not know) ends the walk; after it, calls
// come before text, and text before nothing.
func classifyOutput(field json.RawMessage) Verdict {
	output, ok := list(field)
	if !ok {
		return unsupported("output is not a list")
	}
	var calls []Call
	var texts []string
	for _, raw := range output {
		item, _ := object(raw)
		switch kind, _ := text(item["type"]); kind {
		case "function_call":
			str := func(key string) string { s, _ := text(item[key]); return s }
			call := Call{ID: str("id"), CallID: str("call_id"), Name: str("name"), Arguments: str("arguments")}
			// A call its result cannot name, or whose arguments are not the JSON text the
			// contract promises, is no request to run.
			if call.CallID == "" || call.Name == "" || call.Arguments == "" {
				return Verdict{Kind: InvalidToolCall, Reason: fmt.Sprintf("function_call %q lacks call_id, name or arguments", call.ID)}
			}
			calls = append(calls, call)
		case "message":
			parts, ok := messageContent(item)
			if !ok {
				return unsupported("a message not completed, or without a list of content")
			}
			for _, data := range parts {
				part, _ := object(data)
				switch kind, _ := text(part["type"]); kind {
				case "refusal":
					// A refusal anywhere means the model declined: nothing else in the reply is acted on.
					reason, _ := text(part["refusal"])
					return Verdict{Kind: Refused, Reason: reason}
				case "output_text":
					words, ok := text(part["text"])
					if !ok {
						return unsupported("output_text without a string")
					}
					texts = append(texts, words)
				default:
					return unsupported(fmt.Sprintf("content part %q", kind))
				}
			}
		case "reasoning":
			// nothing to read here, not even a summary; the loop sends it back as it came
		default:
			return unsupported(fmt.Sprintf("output item %q", kind))
		}
	}
	if len(calls) > 0 {
		// Any text beside the calls is a preamble, not an answer.
		return Verdict{Kind: ToolRequests, Calls: calls, Output: output}
	}
	if len(texts) > 0 {
		return Verdict{Kind: Text, Text: strings.Join(texts, "")}
	}
	return Verdict{Kind: Empty}
}

// messageContent is a message's content parts, when its status is absent, null or "completed" and
// its content is a list: a message still in progress is no answer yet.
func messageContent(item map[string]json.RawMessage) ([]json.RawMessage, bool) {
	var status *string
	if raw, present := item["status"]; present && (json.Unmarshal(raw, &status) != nil || status != nil && *status != "completed") {
		return nil, false
	}
	return list(item["content"])
}

// errorCode is error.code of an error body or a failed reply: "" unless "error" is an object whose
// "code" is a string. Nothing else (a "type", a "code" outside "error") stands in for it.
func errorCode(fields map[string]json.RawMessage) string {
	details, _ := object(fields["error"])
	code, _ := text(details["code"])
	return code
}

func unsupported(why string) Verdict {
	return Verdict{Kind: Unsupported, Reason: why}
}

// The decoders below read one JSON value each, kept raw until its turn comes, and say whether it
// had the expected type: null and absent (raw is nil) are neither an object, nor a list, nor a
// string. Objects are decoded into maps, whose keys match exactly; encoding/json matches a struct's
// fields ignoring case.

func object(raw []byte) (map[string]json.RawMessage, bool) {
	var fields map[string]json.RawMessage
	err := json.Unmarshal(raw, &fields)
	return fields, err == nil && fields != nil // null decodes without an error, into a nil map
}

func list(raw json.RawMessage) ([]json.RawMessage, bool) {
	var items []json.RawMessage
	err := json.Unmarshal(raw, &items)
	return items, err == nil && items != nil // null decodes into a nil slice, [] into an empty one
}

func text(raw json.RawMessage) (string, bool) {
	var s *string // a pointer: null decodes into a plain string without an error, leaving ""
	if json.Unmarshal(raw, &s) != nil || s == nil {
		return "", false
	}
	return *s, true
}

// course: end helpers
