import sys

from .apps.cli import main

# Guarded: a worker process started with "spawn" (Dask's local cluster) imports this
# module again, and must not run the command a second time.
if __name__ == "__main__":
    sys.exit(main())
