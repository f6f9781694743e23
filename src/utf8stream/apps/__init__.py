"""Applications on the public API of the layers below: files, follow, the command line."""
