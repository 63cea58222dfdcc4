"""`python -m bench.grounding`: run the grounding benchmark's suites (bench/grounding/run.py)."""

import sys

from bench.grounding.run import main

sys.exit(main())
