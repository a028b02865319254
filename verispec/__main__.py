"""``python -m verispec``."""

import sys

from verispec.cli import main

sys.exit(main())
