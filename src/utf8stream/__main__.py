import gc
import sys

from .apps.cli import main

# Guarded: a worker process started with "spawn" (Dask's local cluster) imports this
# module again, and must not run the command a second time.
if __name__ == "__main__":
    status = main()
    # The process ends here: the objects of the imports are frozen, so the collections
    # of the interpreter's shutdown do not walk them all (a short run's start-up and
    # exit are most of its cost: ``benchmarks/bench_files.py``'s start-up case).  Every
    # file was closed by the command; standard output is flushed by the shutdown itself.
    gc.freeze()
    sys.exit(status)
