// Package proxy is a Responses proxy that fails closed: it answers a client only from complete,
// terminal upstream responses, and runs a tool only when its arguments are complete and the response
// that asked for it has ended.
//
// A Proxy is an http.Handler for POST /v1/responses. A request without tools passes through, byte for
// byte; a request with tools is answered under one of two policies: BufferedFinalStream (the default)
// reads every upstream response here and answers with one final response, as JSON or as a
// synthesized event stream; ProgressEvents forwards text as it streams and still ends in a completed
// or a failed response. Whatever the mode, a tool runs at most once for one client request.
package proxy
