"""``python -m fray_jupyter.controller [--host H] [--port P] [--grpc-port G] [--state-dir DIR]
[--runtime-file PATH] [--slots N] [--token TOKEN]``."""

import sys

from fray_jupyter.controller.server import main

sys.exit(main())
