"""``python -m fray_jupyter.controller [--host H] [--port P] [--grpc-port G] [--state-dir DIR]
[--runtime-file PATH] [--slots N] [--token TOKEN] [--cluster-config NAME|PATH]``, or ``... --iris-local [--port P] [--state-dir DIR]
[--runtime-file PATH] [--cluster-config NAME|PATH]`` for a genuine Iris local cluster."""

import sys

from fray_jupyter.controller.startup import main

sys.exit(main())
