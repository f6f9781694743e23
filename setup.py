"""Build script for the optional C accelerator; all metadata lives in pyproject.toml.

``optional=True``: where the extension cannot be compiled (no C compiler, no Python
headers) the install goes on without it and utf8stream runs in pure Python.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "utf8stream._speedups",
            ["src/utf8stream/_speedups.c", "src/utf8stream/_transcode.c"],
            depends=["src/utf8stream/_transcode.h", "src/utf8stream/_simd.h"],
            optional=True,
        ),
        # The follower's record type and read buffers: the apps layer's own extension.
        Extension(
            "utf8stream.apps._follow_speedups",
            ["src/utf8stream/apps/_follow_speedups.c"],
            optional=True,
        ),
    ],
)
