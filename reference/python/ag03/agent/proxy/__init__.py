"""A Responses proxy that fails closed: it answers a client only from complete, terminal upstream
responses, and executes a tool only when its arguments are complete and the response has ended."""
