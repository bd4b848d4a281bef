package contract

// course: begin imports
import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// course: end imports
// DeveloperInstructions is the developer message every request starts with.
const DeveloperInstructions = "Answer questions about orders with the read_order tool; never guess an order's status. " +
	"Pass only order_id: the application knows who is signed in and checks access itself. " +
	"Reply with a JSON object with exactly the keys order_id, status and source, copied from the tool result. " +
	"Never try to change an order."

// OutputTokenBudget caps what one reply may generate (and cost), unless the caller chooses another
// budget. A reply cut by the cap comes back with status "incomplete", reason "max_output_tokens".
const OutputTokenBudget = 500

// ErrInvalidRequest is what BuildRequest's errors wrap: the request was refused before anything
// was sent.
var ErrInvalidRequest = errors.New("contract: invalid request")

// A Message is one plain input message: the developer's instructions, or what the user asked.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// A Tool is a function tool as the Responses API takes it. Parameters is its JSON Schema; it holds
// maps and slices, so a copy of a Tool shares them with the original.
type Tool struct {
	Type        string         `json:"type"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Strict      bool           `json:"strict"`
	Parameters  map[string]any `json:"parameters"`
}

// A Request is the JSON body of POST /v1/responses. Input holds items as JSON: the messages the
// application writes, and later the model's own output items and the results of its calls.
// Credentials and the user's identity are not part of it: the API key travels in a header the
// caller sets, and identity stays in the application.
type Request struct {
	Model           string            `json:"model"`
	Input           []json.RawMessage `json:"input"`
	Tools           []Tool            `json:"tools"`
	MaxOutputTokens int               `json:"max_output_tokens"`
}

// BuildRequest returns the body that asks model the user's question: the developer message, then
// the question exactly as given, the one read_order tool, and maxOutputTokens as the budget
// (OutputTokenBudget unless the caller chooses another). A model id or question that is empty or
// only whitespace, or a budget below 1, is an error wrapping ErrInvalidRequest, and no request.
func BuildRequest(model, question string, maxOutputTokens int) (*Request, error) {
	// course: begin BuildRequest
	if strings.TrimSpace(model) == "" {
		return nil, fmt.Errorf("%w: the model id is blank", ErrInvalidRequest)
	}
	if strings.TrimSpace(question) == "" {
		return nil, fmt.Errorf("%w: the question is blank", ErrInvalidRequest)
	}
	if maxOutputTokens < 1 {
		return nil, fmt.Errorf("%w: max_output_tokens must be 1 or more, got %d", ErrInvalidRequest, maxOutputTokens)
	}
	return &Request{
		Model: model,
		Input: []json.RawMessage{message("developer", DeveloperInstructions), message("user", question)},
		// A Tool of its own for every request: whoever edits this request's schema edits no other.
		Tools:           []Tool{ReadOrderTool()},
		MaxOutputTokens: maxOutputTokens,
	}, nil
	// course: end BuildRequest
}

// course: begin helpers
// message is one input message as JSON, in a slice of its own.
func message(role, content string) json.RawMessage {
	item, _ := json.Marshal(Message{Role: role, Content: content}) // strings always encode
	return item
}

// course: end helpers
