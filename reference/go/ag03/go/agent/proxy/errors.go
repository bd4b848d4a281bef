package proxy

import "fmt"

// The codes of FailClosed: short and stable, each becomes the error code the client sees.
const (
	CodeTruncated           = "truncated"            // the body ended inside an event or a line, or the connection broke mid-body
	CodeMissingTerminal     = "missing_terminal"     // the body ended before response.completed
	CodeIncompleteCall      = "incomplete_call"      // a call was never closed by its arguments.done event
	CodeUpstreamFailed      = "upstream_failed"      // response.failed
	CodeUpstreamIncomplete  = "upstream_incomplete"  // response.incomplete
	CodeUpstreamError       = "upstream_error"       // an error event
	CodeMismatch            = "mismatch"             // a final statement disagrees with what was streamed
	CodeProtocol            = "protocol"             // anything else the stream does wrong: order, ids, sequence numbers, shapes
	CodeLimit               = "limit"                // over one of the bounds of state.go
	CodeBadArguments        = "bad_arguments"        // a call's final arguments are not a JSON object
	CodeUnknownTool         = "unknown_tool"         // a call to a tool this proxy does not run
	CodeToolFailed          = "tool_failed"          // a tool returned an error
	CodeTurnLimit           = "turn_limit"           // no final answer within MaxTurns upstream responses
	CodeUpstreamUnreachable = "upstream_unreachable" // the upstream could not be reached
	CodeUpstreamStatus      = "upstream_status"      // the upstream answered with a status outside 2xx
)

// FailClosed is the error of an upstream answer the proxy cannot trust: nothing was executed because
// of it, and nothing partial goes out. Code is one of the Code constants; Message says what was
// wrong in words a person reading a log understands; Err is what caused it, when something did (a
// broken connection, a tool's error), for errors.Is and errors.As.
type FailClosed struct {
	Code    string
	Message string
	Err     error
}

func (e *FailClosed) Error() string { return e.Code + ": " + e.Message }

func (e *FailClosed) Unwrap() error { return e.Err }

// Fail returns a *FailClosed with the code and a message formatted as fmt.Sprintf does.
func Fail(code, format string, args ...any) error {
	return &FailClosed{Code: code, Message: fmt.Sprintf(format, args...)}
}
