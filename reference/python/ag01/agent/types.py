# course: begin docstring
"""The agent's vocabulary: messages, tool calls, streamed deltas, and the seams later chapters plug into."""
# course: end docstring

from __future__ import annotations

import contextlib
import contextvars
import enum
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

# --- Messages and tools --------------------------------------------------------------------------


class Role(str, enum.Enum):
    """Who speaks in a message."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


@dataclass(frozen=True)
class ToolCall:
    """The model asking to run tool `name`; `arguments` is the raw JSON text of an object."""

    id: str
    name: str
    arguments: str = "{}"


@dataclass
class Message:
    """One turn of a conversation.

    An assistant message may carry `tool_calls` instead of text; the answer to each call is a
    TOOL message whose `tool_call_id` names the call it answers.
    """

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str = ""
    name: str = ""


@dataclass(frozen=True)
class ToolDef:
    """A tool the model may call: its name, what it does, and a JSON Schema for its arguments."""

    name: str
    description: str = ""
    parameters: dict = field(default_factory=dict)


@dataclass
class CallOptions:
    """Sampling options for one call; None leaves the server's default."""

    temperature: float | None = None
    max_tokens: int | None = None


# --- Deltas: the pieces of a streamed answer ------------------------------------------------------


@dataclass(frozen=True)
class TextDelta:
    """A piece of the answer's text (never empty)."""

    text: str


@dataclass(frozen=True)
class ToolCallStartDelta:
    """The first sight of tool call `index`."""

    index: int
    id: str
    name: str


@dataclass(frozen=True)
class ToolCallArgsDelta:
    """A fragment of the JSON arguments of tool call `index` (never empty)."""

    index: int
    fragment: str


@dataclass(frozen=True)
class ToolCallEndDelta:
    """Tool call `index` is complete; `call.arguments` holds all its fragments joined."""

    index: int
    call: ToolCall


@dataclass(frozen=True)
class UsageDelta:
    """The tokens the call consumed, as the server counted them."""

    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class ErrorDelta:
    """The stream failed; nothing follows."""

    error: Exception


@dataclass(frozen=True)
class DoneDelta:
    """The stream finished normally; nothing follows."""

    finish_reason: str


Delta = (
    TextDelta
    | ToolCallStartDelta
    | ToolCallArgsDelta
    | ToolCallEndDelta
    | UsageDelta
    | ErrorDelta
    | DoneDelta
)

# course: begin is_content
_CONTENT_DELTAS = (TextDelta, ToolCallStartDelta, ToolCallArgsDelta, ToolCallEndDelta)


def is_content(delta: Delta) -> bool:
    """True for the deltas a caller shows or acts on: text and the three tool-call deltas."""
    return isinstance(delta, _CONTENT_DELTAS)


# --- Folding a stream back into one message -------------------------------------------------------
# course: end is_content


@dataclass(frozen=True)
class Usage:
    """Token counts of one call."""

    input_tokens: int = 0
    output_tokens: int = 0


class IncompleteStreamError(Exception):
    """The stream ended with neither a DoneDelta nor an ErrorDelta."""

    def __init__(self, message: str = "the stream ended without a done or error delta") -> None:
        super().__init__(message)


class Accumulator:
    """Folds deltas, in the order they came, into one assistant message."""

    def __init__(self) -> None:
        # course: begin Accumulator__init__
        self._text: list[str] = []
        self._calls: dict[int, ToolCall] = {}  # finished calls by index
        self._usage = Usage()
        self._finish_reason = ""
        self._done = False
        self._error: Exception | None = None
        # course: end Accumulator__init__

    def add(self, delta: Delta) -> None:
        # course: begin Accumulator_add
        """Takes in one delta. Start and argument deltas need no bookkeeping: the end delta carries the call."""
        if isinstance(delta, TextDelta):
            self._text.append(delta.text)
        elif isinstance(delta, ToolCallEndDelta):
            self._calls[delta.index] = delta.call
        elif isinstance(delta, UsageDelta):
            self._usage = Usage(delta.input_tokens, delta.output_tokens)
        elif isinstance(delta, DoneDelta):
            self._done = True
            self._finish_reason = delta.finish_reason
        elif isinstance(delta, ErrorDelta) and self._error is None:
            self._error = delta.error
        # course: end Accumulator_add

    def message(self) -> Message:
        # course: begin Accumulator_message
        """The assistant message so far, its tool calls in index order (not the order they finished in)."""
        calls = [
            ToolCall(call.id, call.name, call.arguments or "{}")
            for _, call in sorted(self._calls.items())
        ]
        return Message(Role.ASSISTANT, "".join(self._text), calls)
        # course: end Accumulator_message

    def usage(self) -> Usage:
        # course: begin Accumulator_usage
        """The last usage reported (zeros when none was)."""
        return self._usage
        # course: end Accumulator_usage

    @property
    def finish_reason(self) -> str:
        # course: begin Accumulator_finish_reason
        """Why the model stopped ("stop", "tool_calls", "length", ...); "" until the DoneDelta."""
        return self._finish_reason
        # course: end Accumulator_finish_reason

    @property
    def error(self) -> Exception | None:
        # course: begin Accumulator_error
        """Why the stream failed: its ErrorDelta's error, IncompleteStreamError without a DoneDelta, else None."""
        if self._error is not None:
            return self._error
        if not self._done:
            return IncompleteStreamError()
        return None
        # course: end Accumulator_error


def collect(deltas: Iterable[Delta]) -> tuple[Message, Usage]:
    # course: begin collect
    """Reads a whole stream into its message and usage; raises the stream's error if it failed."""
    acc = Accumulator()
    for delta in deltas:
        acc.add(delta)
    if acc.error is not None:
        raise acc.error
    return acc.message(), acc.usage()
    # course: end collect


# --- Providers ------------------------------------------------------------------------------------


class DeltaStream(Protocol):
    """An iterator of deltas that can be closed early; generators satisfy it.

    Closing the stream is how a caller cancels: the provider drops the HTTP connection at once,
    so the server stops generating (and billing) tokens nobody will read.
    """

    def __iter__(self) -> Iterator[Delta]: ...

    def __next__(self) -> Delta: ...

    def close(self) -> None: ...


class Provider(Protocol):
    """Anything that streams a model's answer to a conversation."""

    def chat_stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDef] = (),
        options: CallOptions | None = None,
    ) -> DeltaStream:
        """Sends the request and returns its stream.

        Raises APIError for a non-2xx answer and OSError when no answer could be had. Once the
        stream has started, a failure arrives as one ErrorDelta, after which the iterator ends;
        every other stream ends with exactly one DoneDelta.
        """
        ...


# --- Seams: declared here, implemented by later chapters ------------------------------------------


class Decision(str, enum.Enum):
    """What a gate decides about a tool call."""

    ALLOW = "allow"
    DENY = "deny"
    NEED_APPROVAL = "need_approval"


@dataclass(frozen=True)
class Verdict:
    """A gate's decision, with the reason for a denial or the marker of a pending approval."""

    decision: Decision
    reason: str = ""
    marker: str = ""

    @classmethod
    def allow(cls) -> Verdict:
        # course: begin Verdict_allow
        return cls(Decision.ALLOW)
        # course: end Verdict_allow

    @classmethod
    def deny(cls, reason: str) -> Verdict:
        # course: begin Verdict_deny
        return cls(Decision.DENY, reason=reason)
        # course: end Verdict_deny

    @classmethod
    def need_approval(cls, marker: str) -> Verdict:
        # course: begin Verdict_need_approval
        return cls(Decision.NEED_APPROVAL, marker=marker)
        # course: end Verdict_need_approval


class Gate(Protocol):
    """Decides whether a tool call may run."""

    def check(self, call: ToolCall) -> Verdict: ...


@dataclass(frozen=True)
class CallContext:
    """What the loop knows when a gate is asked: has untrusted text entered the conversation, and which iteration."""

    tainted: bool = False
    iter: int = 0


_call_context: contextvars.ContextVar[CallContext] = contextvars.ContextVar("call_context")


def current_call_context() -> CallContext:
    # course: begin current_call_context
    """The CallContext set by the enclosing call_context block.

    With none set, the context counts as tainted: a gate called without context must err on the
    cautious side, never assume the conversation is clean.
    """
    return _call_context.get(CallContext(tainted=True))
    # course: end current_call_context


@contextlib.contextmanager
def call_context(cc: CallContext) -> Iterator[CallContext]:
    # course: begin call_context
    """Sets `cc` as the current call context for the block, then restores the previous one."""
    token = _call_context.set(cc)
    try:
        yield cc
    finally:
        _call_context.reset(token)
    # course: end call_context


class StepKind(str, enum.Enum):
    """What a step does: call the model, or run a tool."""

    LLM = "llm"
    TOOL = "tool"


class StepRunner(Protocol):
    """Runs each model call and tool call as a named step (a durable runner records and replays them)."""

    def run_step(self, name: str, kind: StepKind, fn: Callable[[], bytes]) -> bytes: ...


class Direct:
    """The StepRunner that just runs the step."""

    def run_step(self, name: str, kind: StepKind, fn: Callable[[], bytes]) -> bytes:
        # course: begin Direct_run_step
        return fn()
        # course: end Direct_run_step


def llm_step(iter: int) -> str:
    # course: begin llm_step
    """The step name of the model call of iteration `iter`: "llm/3"."""
    return f"llm/{iter}"
    # course: end llm_step


def tool_step(iter: int, i: int, name: str) -> str:
    # course: begin tool_step
    """The step name of the `i`-th tool call of iteration `iter`: "tool/3/0/get_weather"."""
    return f"tool/{iter}/{i}/{name}"
    # course: end tool_step


def step_tool_name(step: str) -> str | None:
    # course: begin step_tool_name
    """The tool name in a tool step's name, or None when `step` is not one.

    The name is everything after the third "/", so a tool name may contain "/" itself.
    """
    parts = step.split("/", 3)
    if len(parts) != 4:
        return None
    kind, iter_text, index_text, name = parts
    if kind != StepKind.TOOL.value or not name:
        return None
    if not (_is_number(iter_text) and _is_number(index_text)):
        return None
    return name


def _is_number(text: str) -> bool:
    # isdigit() alone would accept digits such as "²" that int() rejects
    return text.isascii() and text.isdigit()
    # course: end step_tool_name
