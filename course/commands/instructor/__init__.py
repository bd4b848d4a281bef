"""The instructor's wing: proving chapters sound, measuring catalogs, grading a class, the fake model
and the machine's readiness."""

from course.commands.instructor import doctor, fake_model, grade, mutants, verify

COMMANDS = (verify.verify, mutants.mutants, grade.grade, fake_model.fake_model, doctor.doctor)
