/** The provider package: an OpenAI-compatible streaming client, its errors, and the retry wrapper. */

export { APIError, ProviderError, StreamCutError, StreamError } from "./errors.js";
export { OpenAIProvider, requestBody } from "./openai.js";
export type { Config } from "./openai.js";
export { RetryPolicy, retryable, sleep, withRetry } from "./retry.js";
export type { RetryOptions, Sleep } from "./retry.js";
export { Decoder, EventReader } from "./sse.js";
export type { SSEEvent } from "./sse.js";
