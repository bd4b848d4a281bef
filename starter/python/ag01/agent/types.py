"""The agent's vocabulary: messages, tool calls, streamed deltas, and the seams later chapters plug into.

The data types are given. What is left for you: `is_content`, `Accumulator`, `collect`, the
`Verdict` constructors, `current_call_context`, `call_context`, `Direct.run_step` and the
step names. Sections 2.1 and 2.4 of `course show ag01` explain them.
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

# --- Messages and tools (given) --------------------------------------------------------------------


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


# --- Deltas: the pieces of a streamed answer (given) -------------------------------------------------


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


def is_content(delta: Delta) -> bool:
    """Return True for the deltas a caller shows or acts on, False for the others.

    Content deltas: TextDelta, ToolCallStartDelta, ToolCallArgsDelta, ToolCallEndDelta.
    Not content: UsageDelta, ErrorDelta, DoneDelta. The retry wrapper uses this to find the
    commitment boundary (section 2.3).
    """
    raise NotImplementedError("is_content: which deltas are content? See section 2.1 of `course show ag01`.")


# --- Folding a stream back into one message ------------------------------------------------------------


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
        """Set up what you need to remember: the text pieces so far, the finished tool calls by
        index, the last usage, the finish reason, whether a DoneDelta came, and the first error.
        """
        raise NotImplementedError("Accumulator: choose its state. See section 2.1 of `course show ag01`.")

    def add(self, delta: Delta) -> None:
        """Take in one delta.

        - TextDelta: remember its text (all texts are joined, in order, by message()).
        - ToolCallEndDelta: remember its call under its index.
        - UsageDelta: it replaces any earlier usage.
        - DoneDelta: remember that it came, and its finish_reason.
        - ErrorDelta: remember its error (the first one, if there were several).
        - ToolCallStartDelta and ToolCallArgsDelta: nothing to do, the end delta carries the call.
        """
        raise NotImplementedError("Accumulator.add: see its docstring and `course show ag01`.")

    def message(self) -> Message:
        """Return the assistant message so far.

        Role ASSISTANT; content = every text joined in order ("" when none); tool_calls = the
        calls of the ToolCallEndDeltas sorted by index (not by the order they ended in), each
        with arguments "{}" when its arguments are empty.
        """
        raise NotImplementedError("Accumulator.message: see its docstring and `course show ag01`.")

    def usage(self) -> Usage:
        """Return the last UsageDelta as a Usage, or Usage() (zeros) when none came."""
        raise NotImplementedError("Accumulator.usage: see its docstring and `course show ag01`.")

    @property
    def finish_reason(self) -> str:
        """Why the model stopped: the DoneDelta's finish_reason, or "" before any DoneDelta."""
        raise NotImplementedError("Accumulator.finish_reason: see its docstring and `course show ag01`.")

    @property
    def error(self) -> Exception | None:
        """Why the stream failed, or None.

        The error of the ErrorDelta if one was added; otherwise an IncompleteStreamError() if no
        DoneDelta was added; otherwise None.
        """
        raise NotImplementedError("Accumulator.error: see its docstring and `course show ag01`.")


def collect(deltas: Iterable[Delta]) -> tuple[Message, Usage]:
    """Read a whole stream and return (message, usage).

    Fold every delta into an Accumulator; if its `error` is not None, raise that error;
    otherwise return its message() and usage().
    """
    raise NotImplementedError("collect: fold with an Accumulator. See section 2.1 of `course show ag01`.")


# --- Providers (given) --------------------------------------------------------------------------------


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


# --- Seams: declared here, implemented by later chapters ----------------------------------------------


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
        """Return a Verdict with decision ALLOW (no reason, no marker)."""
        raise NotImplementedError("Verdict.allow: see section 2.4 of `course show ag01`.")

    @classmethod
    def deny(cls, reason: str) -> Verdict:
        """Return a Verdict with decision DENY and this reason."""
        raise NotImplementedError("Verdict.deny: see section 2.4 of `course show ag01`.")

    @classmethod
    def need_approval(cls, marker: str) -> Verdict:
        """Return a Verdict with decision NEED_APPROVAL and this marker."""
        raise NotImplementedError("Verdict.need_approval: see section 2.4 of `course show ag01`.")


class Gate(Protocol):
    """Decides whether a tool call may run."""

    def check(self, call: ToolCall) -> Verdict: ...


@dataclass(frozen=True)
class CallContext:
    """What the loop knows when a gate is asked: has untrusted text entered the conversation, and which iteration."""

    tainted: bool = False
    iter: int = 0


# The current CallContext lives here; it starts with no value at all.
_call_context: contextvars.ContextVar[CallContext] = contextvars.ContextVar("call_context")


def current_call_context() -> CallContext:
    """Return the CallContext set by the enclosing `call_context` block.

    When none is set, return CallContext(tainted=True), not CallContext(): a gate called without
    context must assume the conversation saw untrusted input. (ContextVar.get takes a default.)
    """
    raise NotImplementedError("current_call_context: see section 2.4 of `course show ag01`.")


@contextlib.contextmanager
def call_context(cc: CallContext) -> Iterator[CallContext]:
    """Make `cc` the current call context inside a `with call_context(cc):` block.

    Set the ContextVar, yield `cc`, and restore the previous value when the block ends, even
    when it ends with an exception (ContextVar.set returns a token for ContextVar.reset).
    """
    raise NotImplementedError("call_context: see section 2.4 of `course show ag01`.")


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
        """Call fn() and return what it returns (name and kind are not used)."""
        raise NotImplementedError("Direct.run_step: see section 2.4 of `course show ag01`.")


def llm_step(iter: int) -> str:
    """The step name of the model call of iteration `iter`: llm_step(3) == "llm/3"."""
    raise NotImplementedError("llm_step: see section 2.4 of `course show ag01`.")


def tool_step(iter: int, i: int, name: str) -> str:
    """The step name of the `i`-th tool call of iteration `iter`: tool_step(3, 0, "get_weather") == "tool/3/0/get_weather"."""
    raise NotImplementedError("tool_step: see section 2.4 of `course show ag01`.")


def step_tool_name(step: str) -> str | None:
    """Return the tool name of a tool step's name, or None when `step` is not one.

    "tool/3/0/get_weather" gives "get_weather". The name is everything after the third "/", so
    "tool/3/0/fs/read" gives "fs/read". Return None for an llm step, for anything that does not
    start with "tool/", for fewer than four parts, for an empty name, and when the iteration or
    the index is not made of the digits 0-9 ("tool/x/0/get_weather" is not a tool step).
    """
    raise NotImplementedError("step_tool_name: see section 2.4 of `course show ag01`.")
