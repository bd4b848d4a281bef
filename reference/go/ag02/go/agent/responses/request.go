package responses

// course: begin imports
import (
	"encoding/json"
	"fmt"
)

// course: end imports

// MaxOutputTokens is the budget each request allows the model to generate.
const MaxOutputTokens = 2048

// BuildRequest returns one streaming request that replays the whole history and keeps nothing on
// the server: model, input, tools, store false, stream true, max_output_tokens. No
// previous_response_id: nothing earlier is referenced.
//
// Each message becomes input items in order: a text turn {role, content}; an assistant turn its
// text (or its refusal) first, then one function call item per call (call id, name, the arguments
// as JSON text, no item id); a tool turn a function call output answering an earlier call. A tool
// turn whose call id names no earlier call, and a role it does not know, are refused with an
// error wrapping ErrBadHistory. Each tool becomes a strict function schema whose parameters are
// all required strings, nothing else allowed. The request shares no memory with the history or
// the tools: the caller may change either afterwards.
func BuildRequest(history []Message, tools []ToolSpec, model string, maxOutputTokens int) (*Request, error) {
	// course: begin BuildRequest
	input, err := inputItems(history)
	if err != nil {
		return nil, err
	}
	schemas := make([]Tool, 0, len(tools)) // [] in the JSON, not null, when there are none
	for _, tool := range tools {
		schemas = append(schemas, toolSchema(tool))
	}
	return &Request{Model: model, Input: input, Tools: schemas, Store: false, Stream: true, MaxOutputTokens: maxOutputTokens}, nil
	// course: end BuildRequest
}

// course: begin helpers

func inputItems(history []Message) ([]InputItem, error) {
	items := make([]InputItem, 0, len(history))
	asked := make(map[string]bool) // call ids requested so far: a result must answer one of them
	for i, m := range history {
		switch m.Role {
		case RoleTool:
			if !asked[m.ToolCallID] {
				return nil, fmt.Errorf("%w: message %d answers call %q, which no earlier message made", ErrBadHistory, i, m.ToolCallID)
			}
			items = append(items, FunctionCallOutputItem{CallID: m.ToolCallID, Output: m.Content})
			continue
		case RoleDeveloper, RoleUser, RoleAssistant:
		default:
			return nil, fmt.Errorf("%w: message %d has the unknown role %q", ErrBadHistory, i, m.Role)
		}
		text := m.Content
		if text == "" {
			text = m.Refusal // a refusal is replayed as the assistant's words
		}
		if text != "" || len(m.ToolCalls) == 0 {
			items = append(items, MessageItem{Role: m.Role, Content: text})
		}
		for _, call := range m.ToolCalls {
			arguments := call.Arguments
			if arguments == nil {
				arguments = map[string]string{} // a nil map is "null" in JSON; the API wants an object
			}
			text, _ := json.Marshal(arguments) // a map of strings always marshals
			asked[call.ID] = true
			// No item id: with store false the server keeps no item an id could point at.
			items = append(items, FunctionCallItem{CallID: call.ID, Name: call.Name, Arguments: string(text)})
		}
	}
	return items, nil
}

// toolSchema is the strict schema of one tool: each parameter a required string, nothing else allowed.
func toolSchema(tool ToolSpec) Tool {
	properties := make(map[string]Property, len(tool.Parameters))
	for _, name := range tool.Parameters {
		properties[name] = Property{Type: "string"}
	}
	// a copy: the request must not share its backing array with the caller's ToolSpec
	required := append(make([]string, 0, len(tool.Parameters)), tool.Parameters...)
	return Tool{
		Type:        "function",
		Name:        tool.Name,
		Description: tool.Description,
		Parameters:  JSONSchema{Type: "object", Properties: properties, Required: required, AdditionalProperties: false},
		Strict:      true,
	}
}

// course: end helpers
