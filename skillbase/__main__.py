"""`python -m skillbase` runs the CLI."""

from skillbase.cli import main

main()
