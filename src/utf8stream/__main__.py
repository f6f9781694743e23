import gc
import sys

from .apps.cli import main

# Guarded: a worker process started with "spawn" (Dask's local cluster) imports this
# module again, and must not run the command a second time.
if __name__ == "__main__":
    status = main()
    # The process ends here: the objects of the imports are frozen, so the collections
    # of the interpreter's shutdown do not walk them all (a tenth of a short run's
    # instructions).  Every file was closed by the command; standard output is flushed
    # by the shutdown itself, as before.
    gc.freeze()
    sys.exit(status)
