"""The learner's wing: the commands of a learner's loop, in the order a learner meets them."""

from course.commands.learner import (
    check,
    diff,
    hint,
    listing,
    reset,
    run,
    selftest,
    show,
    start,
    tests,
    watch,
)

COMMANDS = (listing.list_cmd, start.start, show.show, tests.tests, check.check, watch.watch, hint.hint,
            diff.diff, reset.reset, run.run, selftest.selftest)
