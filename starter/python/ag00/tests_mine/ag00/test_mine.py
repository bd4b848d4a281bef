"""Your own tests for ag00. `course selftest` runs them on the course's reference (each must pass
there) and on every pitfall mutant of the chapter (each mutant should make at least one fail).
Write a test per rule you want to pin down; here is one to start from."""

from agent.contract.classify import Kind, classify_response


def test_plain_text_reply_is_text():
    reply = {"status": "completed", "output": [{"type": "message", "role": "assistant", "status": "completed",
                                                "content": [{"type": "output_text", "text": "Hello"}]}]}
    verdict = classify_response(reply, 200)
    assert verdict.kind == Kind.TEXT, f"a completed message with text is TEXT, got {verdict.kind}"
