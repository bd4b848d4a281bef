"""``python -m course.fake_model`` is ``course fake-model``: one command line, defined in course/cli.py."""

import sys

from course.cli import main

if __name__ == "__main__":
    sys.argv = ["course", "fake-model", *sys.argv[1:]]
    main()
