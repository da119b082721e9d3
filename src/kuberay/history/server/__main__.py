"""`python -m kuberay.history.server`: how `kuberay local up --history` starts the server."""

import sys

from kuberay.history.server.main import main

sys.exit(main())
