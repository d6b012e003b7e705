"""`python -m specchat` and the `specchat` console script."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
