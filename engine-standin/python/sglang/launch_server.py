"""`python3 -m sglang.launch_server` on the local cluster: the kvpool engine stand-in in SGLang mode (no
model runs; see docs/engine-standin.md). It runs in this interpreter."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))))

from kvpool_engine_standin import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main("sglang", sys.argv[1:]))
