import sys

from bpekit.cli import main

sys.exit(main())
