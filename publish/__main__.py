"""`python -m publish`: the same as the `attnbook` command."""
import sys

from publish.cli import main

sys.exit(main())
