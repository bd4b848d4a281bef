/**
 * The agent's vocabulary: messages, tool calls, streamed deltas, and the seams later chapters
 * plug into.
 */

import { AsyncLocalStorage } from "node:async_hooks";

// ---- Messages and tools -------------------------------------------------------------------------

/** Who speaks in a message. */
export type Role = "system" | "user" | "assistant" | "tool";

/** The model asking to run tool `name`; `arguments` is the raw JSON text of an object ("{}" for none). */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * One turn of a conversation. An assistant message may carry `toolCalls` instead of text (or
 * beside it); the answer to each call is a "tool" message whose `toolCallId` names that call.
 */
export interface Message {
  role: Role;
  content: string;
  toolCalls?: ToolCall[];
  toolCallId?: string;
  name?: string;
}

/** A JSON object, as a tool's parameter schema is one. */
export type JsonObject = { [key: string]: unknown };

/** A tool the model may call: its name, what it does, and a JSON Schema of its arguments. */
export interface ToolDef {
  name: string;
  description?: string;
  parameters?: JsonObject;
}

/**
 * The options of one call: sampling options the server receives when set (undefined leaves its
 * default), and a signal that cancels the call and its stream.
 */
export interface CallOptions {
  temperature?: number;
  maxTokens?: number;
  signal?: AbortSignal;
}

// ---- Deltas: the pieces of a streamed answer ------------------------------------------------------

/** A piece of the answer's text (never empty). */
export interface TextDelta {
  readonly type: "text";
  readonly text: string;
}

/** The first sight of tool call `index`. */
export interface ToolCallStartDelta {
  readonly type: "tool_call_start";
  readonly index: number;
  readonly id: string;
  readonly name: string;
}

/** A fragment of the JSON arguments of tool call `index` (never empty). */
export interface ToolCallArgsDelta {
  readonly type: "tool_call_args";
  readonly index: number;
  readonly fragment: string;
}

/** Tool call `index` is complete; `call.arguments` holds all its fragments joined. */
export interface ToolCallEndDelta {
  readonly type: "tool_call_end";
  readonly index: number;
  readonly call: ToolCall;
}

/** The tokens the call consumed, as the server counted them. */
export interface UsageDelta {
  readonly type: "usage";
  readonly inputTokens: number;
  readonly outputTokens: number;
}

/** The stream finished normally; nothing follows. */
export interface DoneDelta {
  readonly type: "done";
  readonly finishReason: string;
}

/** The stream failed; nothing follows. */
export interface ErrorDelta {
  readonly type: "error";
  readonly error: Error;
}

/** One piece of a streamed answer; `type` tells which. */
export type Delta =
  | TextDelta
  | ToolCallStartDelta
  | ToolCallArgsDelta
  | ToolCallEndDelta
  | UsageDelta
  | DoneDelta
  | ErrorDelta;

/** Whether a caller shows or acts on `delta`: text and the three tool-call deltas. */
export function isContent(delta: Delta): boolean {
  // course: begin isContent
  switch (delta.type) {
    case "text":
    case "tool_call_start":
    case "tool_call_args":
    case "tool_call_end":
      return true;
    default:
      return false;
  }
  // course: end isContent
}

/**
 * A streamed answer: read it with `for await`. Its last delta is one DoneDelta or one ErrorDelta;
 * it never throws once it exists. `return()` (what `break` out of a `for await` calls) ends it
 * early and closes its connection, whether or not reading began.
 */
export interface DeltaStream extends AsyncIterator<Delta, void, undefined> {
  [Symbol.asyncIterator](): DeltaStream;
  return(): Promise<IteratorResult<Delta, void>>;
}

// ---- Folding a stream back into one message ---------------------------------------------------------

/** The token count of one call. */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
}

/** The error of a stream that ended with neither a done nor an error delta. */
export class IncompleteStreamError extends Error {
  override name = "IncompleteStreamError";

  constructor(message = "the stream ended without a done or error delta") {
    super(message);
  }
}

/** Folds deltas, in the order they came, into one assistant message. */
export class Accumulator {
  // course: begin Accumulator_fields
  readonly #text: string[] = [];
  readonly #calls = new Map<number, ToolCall>(); // ended calls, by index
  #usage: Usage = { inputTokens: 0, outputTokens: 0 };
  #finishReason = "";
  #done = false;
  #error: Error | undefined;
  // course: end Accumulator_fields

  /** Takes in one delta. Start and argument deltas need no bookkeeping: the end delta carries the whole call. */
  add(delta: Delta): void {
    // course: begin Accumulator_add
    switch (delta.type) {
      case "text":
        this.#text.push(delta.text);
        break;
      case "tool_call_end":
        this.#calls.set(delta.index, delta.call);
        break;
      case "usage":
        this.#usage = { inputTokens: delta.inputTokens, outputTokens: delta.outputTokens };
        break;
      case "done":
        this.#done = true;
        this.#finishReason = delta.finishReason;
        break;
      case "error":
        this.#error ??= delta.error;
        break;
    }
    // course: end Accumulator_add
  }

  /**
   * The assistant message so far, built afresh on every call: its tool calls in index order (not
   * the order they ended in), a call without arguments given "{}".
   */
  message(): Message {
    // course: begin Accumulator_message
    const toolCalls = [...this.#calls]
      .sort(([a], [b]) => a - b)
      .map(([, call]) => ({ ...call, arguments: call.arguments || "{}" }));
    return { role: "assistant", content: this.#text.join(""), toolCalls };
    // course: end Accumulator_message
  }

  /** The last usage reported (zeros when none was). */
  usage(): Usage {
    // course: begin Accumulator_usage
    return { ...this.#usage };
    // course: end Accumulator_usage
  }

  /** Why the model stopped ("stop", "tool_calls", "length" ...); "" until the DoneDelta. */
  get finishReason(): string {
    // course: begin Accumulator_finishReason
    return this.#finishReason;
    // course: end Accumulator_finishReason
  }

  /**
   * Why the stream failed: the first ErrorDelta's own error, an IncompleteStreamError while
   * neither a done nor an error delta has come, undefined after a DoneDelta.
   */
  get error(): Error | undefined {
    // course: begin Accumulator_error
    if (this.#error !== undefined) {
      return this.#error;
    }
    return this.#done ? undefined : new IncompleteStreamError();
    // course: end Accumulator_error
  }
}

/** Reads `stream` to its end: the message and usage, or the stream's error thrown. */
export async function collect(stream: AsyncIterable<Delta>): Promise<{ message: Message; usage: Usage }> {
  // course: begin collect
  const accumulator = new Accumulator();
  for await (const delta of stream) {
    accumulator.add(delta);
  }
  const error = accumulator.error;
  if (error !== undefined) {
    throw error;
  }
  return { message: accumulator.message(), usage: accumulator.usage() };
  // course: end collect
}

// ---- Providers -------------------------------------------------------------------------------------

/** Anything that streams a model's answer to a conversation. */
export interface Provider {
  /**
   * Sends the request and resolves to the answer's stream once its head has arrived. Rejects
   * when there is no stream at all: an APIError for a non-2xx answer, fetch's TypeError when the
   * server was out of reach, the signal's reason when it aborted first. From then on every
   * failure is the stream's last delta, an ErrorDelta; aborting the signal ends the stream early.
   */
  chatStream(messages: readonly Message[], tools?: readonly ToolDef[], options?: CallOptions): Promise<DeltaStream>;
}

// ---- Seams: declared here, implemented by later chapters ----------------------------------------------

/** What a gate decides about a tool call. */
export type Decision = "allow" | "deny" | "need_approval";

/** A gate's decision, with the reason of a denial or the marker of a pending approval. */
export interface Verdict {
  readonly decision: Decision;
  readonly reason: string;
  readonly marker: string;
}

/** The three ways to build a Verdict. */
export const Verdict = {
  allow(): Verdict {
    // course: begin Verdict_allow
    return { decision: "allow", reason: "", marker: "" };
    // course: end Verdict_allow
  },
  deny(reason: string): Verdict {
    // course: begin Verdict_deny
    return { decision: "deny", reason, marker: "" };
    // course: end Verdict_deny
  },
  needApproval(marker: string): Verdict {
    // course: begin Verdict_needApproval
    return { decision: "need_approval", reason: "", marker };
    // course: end Verdict_needApproval
  },
};

/** Decides whether a tool call may run. */
export interface Gate {
  check(call: ToolCall): Promise<Verdict>;
}

/** What the loop knows when a gate is asked: has untrusted text entered the conversation, in which iteration. */
export interface CallContext {
  readonly tainted: boolean;
  readonly iter: number;
}

// course: begin callContextStore
const callContextStore = new AsyncLocalStorage<CallContext>();

// course: end callContextStore
/**
 * The call context of the code running now. With none set it is tainted: a gate asked without
 * context must assume untrusted text was seen.
 */
export function currentCallContext(): CallContext {
  // course: begin currentCallContext
  return callContextStore.getStore() ?? { tainted: true, iter: 0 };
  // course: end currentCallContext
}

/**
 * Runs `fn` with `cc` as the call context, for it and everything it awaits or starts; when `fn`
 * returns or throws, the context that was there before is back.
 */
export function withCallContext<T>(cc: CallContext, fn: () => T): T {
  // course: begin withCallContext
  return callContextStore.run(cc, fn);
  // course: end withCallContext
}

/** What a step does: call the model, or run a tool. */
export type StepKind = "llm" | "tool";

/** Runs each model call and tool call as a named step (a durable runner records results and replays them). */
export interface StepRunner {
  runStep(name: string, kind: StepKind, fn: () => Promise<Uint8Array>): Promise<Uint8Array>;
}

/** The StepRunner that just runs the step. */
export class Direct implements StepRunner {
  /** Runs `fn` and gives back what it gives. */
  runStep(name: string, kind: StepKind, fn: () => Promise<Uint8Array>): Promise<Uint8Array> {
    // course: begin Direct_runStep
    return fn();
    // course: end Direct_runStep
  }
}

/** The step name of the model call of iteration `iter`: "llm/3". */
export function llmStep(iter: number): string {
  // course: begin llmStep
  return `llm/${iter}`;
  // course: end llmStep
}

/** The step name of the `index`-th tool call of iteration `iter`: "tool/3/0/get_weather". */
export function toolStep(iter: number, index: number, name: string): string {
  // course: begin toolStep
  return `tool/${iter}/${index}/${name}`;
  // course: end toolStep
}

/**
 * The tool name in a tool step's name, or undefined when `step` is not one. The name is
 * everything after the third "/", so a tool name may itself contain "/".
 */
export function stepToolName(step: string): string | undefined {
  // course: begin stepToolName
  const match = /^tool\/([0-9]+)\/([0-9]+)\/(.+)$/s.exec(step);
  return match?.[3];
  // course: end stepToolName
}
