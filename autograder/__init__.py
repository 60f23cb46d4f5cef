"""The instructor's autograder: CLI and grading engine on top of nbgrader."""
import sys

# jsonschema checks the "iri" format only when `rfc3987_syntax` imports, and that module compiles an
# Earley grammar as it is imported, seconds of every grader start, since nbformat imports jsonschema.
# No schema the grader validates (nbformat's, nbgrader's) uses that format: the grader goes without.
sys.modules.setdefault("rfc3987_syntax", None)
