"""Collect a class's submissions into nbgrader's `submitted/` layout.

A source is a folder or a zip; every file in it is an *upload*. The package, in the order a
file goes through it:

* `sources`: the files of a folder or a zip, one at a time, read within `Caps` (a zip bomb
  costs at most the caps in time and one member in memory; every collect has a total).
* `layouts`: whose upload a file is: one class per LMS or exchange (nbgrader's submitted/
  layout, the instructor's `--pattern`, Moodle, Blackboard, Canvas, a plain folder of
  students' folders), tried in the one order of `layouts.LAYOUTS`, outermost part of the path
  first. Ownership comes only from what the LMS or exchange controls, never from what the
  student wrote (their folders, the names inside their zip, a backslash in a file name); a
  student's part that names another owner is a problem collect names. An owner's `Identity`
  (kind, id) is the layout's id for the user: Canvas's user id is one person in every download.
* `placement`: which notebook of the course an owned file is, by its name, else by its content
  (the release's graded-cell ids and locked cells); a student's zip is opened once, each file in
  it its owner's.
* `caps`: a placed notebook within `Caps` (outputs dropped, long sources cut, each cut said),
  after the one guard on notebook bytes (`autograder.notebook_guard`, shared with the engine).
* `batch`: one collect: identities settled, the latest upload of each notebook written with
  nbgrader's timestamp.txt, everything else reported, never fatal.
* `manifest`: course/collected.json, what collect decided about every upload.

An upload's time is the LMS's (a zip member's time, Blackboard's attempt time) or nbgrader's
`timestamp.txt` beside it; a folder's file without one is not timed unless the instructor asks
for file times (`collect --file-times`). Student ids must start with a letter or digit and hold
only letters, digits and `_ . @ + -` (the whole id: a trailing newline is refused); a file is
written only inside `submitted/`.
"""
from autograder.collect.batch import CollectResult, collect, identify, lms_user_id
from autograder.collect.caps import capped, check_notebook, checked, read_bounded
from autograder.collect.layouts import (
    LAYOUTS,
    STUDENT_ID,
    Context,
    Identity,
    Layout,
    Owner,
    Problem,
    compile_pattern,
    is_student_id,
    owner_of,
)
from autograder.collect.manifest import MANIFEST, Manifest, Record, Unplaced
from autograder.collect.placement import Placed, Signatures, classify, course_notebooks, expand, place
from autograder.collect.sources import Budget, Caps, CollectError, Entry, MiB, read_source, read_zip

__all__ = [
    "LAYOUTS", "MANIFEST", "STUDENT_ID", "Budget", "Caps", "CollectError", "CollectResult", "Context", "Entry",
    "Identity", "Layout", "Manifest", "MiB", "Owner", "Placed", "Problem", "Record", "Signatures", "Unplaced",
    "capped", "check_notebook", "checked", "classify", "collect", "compile_pattern", "course_notebooks", "expand",
    "identify", "is_student_id", "lms_user_id", "owner_of", "place", "read_bounded", "read_source", "read_zip",
]
