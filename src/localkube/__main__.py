"""`python -m localkube ...`: see `localkube.cli`."""

from localkube.cli import main

main()
