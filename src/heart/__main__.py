"""`python -m heart` is the `heart` command."""

from heart.cli import main

main()
