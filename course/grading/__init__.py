"""Grading a class: points per catalog test, a gradebook over many learner repositories, and the
files a learner's own CI writes so that a class is graded by its CI fleet.

- `scores`: a check's points from the manifest's weights; GitHub Classroom's runner result.
- `gradebook`: one row per learner, written as CSV, JSON and a terminal table.
- `roster`: which repositories a roster names.
- `grade`: each repository checked on a fresh copy, in parallel, within its own limits.
- `from_results`: the same gradebook built from results.json files a CI uploaded.
- `workflow`: the GitHub Actions workflow `course start --ci github` writes.
"""
