"""`python -m swamp ...` runs the `swamp` command (e.g. `python -X importtime -m swamp workflow waits`)."""

from .cli.main import main

if __name__ == "__main__":
    main()
