/** The errors a provider throws, or reports in an ErrorDelta. */

/** Base of the provider's own errors. */
export class ProviderError extends Error {
  override name = "ProviderError";
}

/**
 * The server answered the request with a status outside 2xx. `type`, `code` and `serverMessage`
 * come from the body's {"error": {...}} when it has one (else `serverMessage` is the body's text);
 * `retryAfterMs` is the Retry-After header in milliseconds, undefined when absent or unreadable.
 * Its message reads "HTTP 400 invalid_request_error: bad model".
 */
export class APIError extends ProviderError {
  override name = "APIError";

  constructor(
    readonly status: number,
    readonly type = "",
    readonly code = "",
    readonly serverMessage = "",
    readonly retryAfterMs?: number,
  ) {
    super(`HTTP ${status}${type ? ` ${type}` : ""}${serverMessage ? `: ${serverMessage}` : ""}`);
  }
}

/** The body ended before data: [DONE]: a reset, a crashed server or a proxy's time limit cut it short. */
export class StreamCutError extends ProviderError {
  override name = "StreamCutError";

  constructor(message = "the stream ended before data: [DONE]") {
    super(message);
  }
}

/** The server reported a failure inside the stream, as an event data: {"error": {...}}. */
export class StreamError extends ProviderError {
  override name = "StreamError";

  constructor(
    readonly type = "",
    readonly code = "",
    readonly serverMessage = "",
  ) {
    super(`stream error ${type || "unknown"}: ${serverMessage}`);
  }
}
