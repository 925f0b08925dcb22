"""`python -m mnemodb` is the `mnemodb` command."""

import sys

from mnemodb.cli.main import main

sys.exit(main())
