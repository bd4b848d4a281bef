"""Grading a class: points per catalog test, a gradebook over many learner repositories, and the
files a learner's own CI writes so that a class is graded by its CI fleet.

- `scores`: a check's points from the manifest's weights; GitHub Classroom's runner result.
- `gradebook`: one row per learner, written as CSV, JSON and a terminal table, again after every row.
- `roster`: which repositories (or names) a roster holds.
- `grade`: each repository checked on a fresh copy in the sandbox (course.sandbox), in parallel,
  within its own limits; timing-sensitive failures judged again once.
- `from_results`: the same gradebook built from results.json files (or zips) a CI uploaded.
- `report`: the class report, an HTML page (Jinja2).
- `workflow`: the GitHub Actions workflow `course start --ci github --from SOURCE` writes.
"""
