"""`python -m controllers.cli`: the `placement` command."""

import sys

from controllers.cli.main import main

sys.exit(main())
