"""The languages the course has an adapter for: the one place a language is registered by name.

This module imports nothing, so the package build (hatch_build.py) can read it without importing
the harness: what a wheel carries follows from the languages registered here.
"""

# language -> "module:class" of its adapter (course.languages.protocol is the contract)
ADAPTERS: dict[str, str] = {
    "python": "course.languages.python.adapter:PythonAdapter",
    "go": "course.languages.go.adapter:GoAdapter",
    "typescript": "course.languages.typescript.adapter:TypeScriptAdapter",
}

# The track a command acts on when none is named and the learner has started none.
DEFAULT_LANGUAGE = "python"

# Languages whose test processes can start getting ready before a command has read its chapter:
# module with start(workers) and stop(). A command that runs one check a person waits for starts
# them as it begins (the cost: one core's work for a fraction of a second); once the chapter's
# track is known, those of other languages are stopped.
EARLY: dict[str, str] = {"python": "course.languages.python.zygote"}
