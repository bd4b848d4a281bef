"""The commands, one module each, in two wings: the learner's (course.commands.learner) and the
instructor's (course.commands.instructor). What they share is course.commands.shared; the group,
the order of the help and the mapping of errors to exit codes are course.cli's.

A command module parses its options, calls the engine below it (course.check, course.verify,
course.mutation, course.grading, ...) and prints; heavy modules are imported inside the command, so
that `course --help` loads none of them. Commands never import each other.
"""
