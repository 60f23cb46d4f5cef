"""Reference implementations: the graders' oracle. Instructor-only.

Never importable from a student's process while grading (see autograder/sandbox).
One module per chapter; `answers` holds the reference symbolic answers.
"""
