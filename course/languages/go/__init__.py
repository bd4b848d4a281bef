"""The Go language track: catalogs are Go test files overlaid on the learner's module.

adapter.py is what the harness calls (course.languages.ADAPTERS); build.py makes the catalog's test
binary, worker.py runs it under test2json, toolchain.py finds the go command, coverage.py reads what a
run covered; schemata.py and gremlins.py serve `course mutants`.
"""
