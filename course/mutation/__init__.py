"""Mutation testing of a chapter's catalog with its documented pitfall mutants (documented.py). A broad
score from a general tool (mutmut, gremlins) is a language's optional capability: BroadMutation in
course.languages.protocol."""
