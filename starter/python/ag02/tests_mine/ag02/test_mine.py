"""Your own tests for ag02. `course selftest` runs them on the course's reference (each must pass
there) and on every pitfall mutant of the chapter (each mutant should make at least one fail).
Write a test per rule you want to pin down; here is one to start from."""

from agent.responses.assembly import ResponseAssembly


def test_a_finished_argument_string_is_not_a_decision():
    assembly = ResponseAssembly([], lambda kind, detail: None)
    assembly.accept({"type": "response.created", "response": {"id": "resp_1"}})
    assembly.accept({"type": "response.output_item.added",
                     "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": ""}})
    assembly.accept({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '{"path": "a.py"}'})
    done = {"type": "response.function_call_arguments.done", "item_id": "fc_1", "arguments": '{"path": "a.py"}'}
    assert assembly.accept(done) is None, "arguments.done finishes one string, not the response"
