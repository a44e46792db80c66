import sys

from kjudge.bench.cli import main

sys.exit(main())
