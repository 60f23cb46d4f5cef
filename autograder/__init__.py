"""The instructor's autograder: CLI and grading engine on top of nbgrader."""
