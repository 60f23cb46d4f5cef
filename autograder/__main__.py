"""`python -m autograder ...`: the instructor's command line."""
import sys

from autograder.cli import main

sys.exit(main())
