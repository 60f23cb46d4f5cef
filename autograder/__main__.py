"""`python -m autograder ...`: the instructor's command line."""
from autograder.cli import run

run()
