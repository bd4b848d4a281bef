"""Mutation testing of a chapter's catalog: documented pitfall mutants and mutmut's broad score."""
