// Package contract makes one non-streaming Responses call safely, and keeps the contract around it.
//
// Read its files in this order:
//
//   - request.go  builds the request body (model, instructions, question, tool, budget);
//   - classify.go sorts a reply into exactly one Kind, reading three statuses in turn;
//   - orders.go   runs the one read-only tool, with identity taken from the session;
//   - loop.go     runs bounded turns, returns results by call_id and checks the answer.
package contract
