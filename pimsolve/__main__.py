"""``python -m pimsolve`` runs the command line."""

from pimsolve.cli import main

main()
