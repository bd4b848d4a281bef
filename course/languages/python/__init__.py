"""The Python language track: catalogs are pytest files, run in forked worker processes.

adapter.py is what the harness calls (course.languages.ADAPTERS); launch.py starts the workers and
worker.py is their side of a run; zygote.py gets a check's first workers ready while its command line
is parsed; bytecode.py, imports.py and measure.py compile, preload and measure coverage. Nothing is
imported here: `course check` starts the zygote before anything else, and must not wait for the
adapter's imports.
"""
