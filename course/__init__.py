"""course: an exercise harness for a hands-on course on talking to LLM providers reliably.

Learners scaffold a chapter's stubs (`course start`), read its catalog (`course tests`), get a verdict
(`course check`) and, once passing, compare with the reference (`course diff`). Instructors prove each
chapter sound (`course verify`, `course mutants`).
"""

__version__ = "0.1.0"
