"""What a catalog needs from the harness reaches it through the environment, the same in every language.

    COURSE_FIXTURES        the chapter's recorded data (fixtures/<chapter>/), as an absolute path
    COURSE_SCRATCH         an empty folder for this run's own files, removed after it
    COURSE_FAKE_MODEL_URL  base URL (http://127.0.0.1:PORT/v1) of a course fake model started for
                           the run, when the track lists `services: [fake-model]` (or, for `course
                           run` only, `run_services: [fake-model]`)

The names live here, on the ground floor, because both sides read them: the harness fills them
(course.services.environment, for the length of a run) and a language's worker or tool passes them
on to the test process as they are (RunRequest.env). A catalog reads them and never imports the harness.
"""

FIXTURES_VAR = "COURSE_FIXTURES"
SCRATCH_VAR = "COURSE_SCRATCH"
FAKE_MODEL_VAR = "COURSE_FAKE_MODEL_URL"
