"""`python -m ocm_placement`: the `placement` command."""

import sys

from ocm_placement.cli import main

sys.exit(main())
