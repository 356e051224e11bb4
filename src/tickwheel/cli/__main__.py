import sys

from tickwheel.cli import main

sys.exit(main())
