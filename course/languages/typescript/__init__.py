"""The TypeScript language track: the learner's package and the catalog compiled together by the
pinned TypeScript compiler, run by node under node:test.

adapter.py is what the harness calls (course.languages.ADAPTERS); toolchain.py finds node and
installs the pinned tools (toolchain/package-lock.json) into the user's cache, build.py compiles,
worker.py runs a compiled catalog in node (node/runner.mjs, with our reporter node/reporter.mjs),
coverage.py reads what a run covered (node/coverage.mjs); stryker.py serves `course mutants`.
"""
