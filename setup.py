"""Build script for the optional C accelerator; all metadata lives in pyproject.toml.

``optional=True``: where the extension cannot be compiled (no C compiler, no Python
headers) the install goes on without it and utf8stream runs in pure Python.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "utf8stream._speedups",
            # The core's C sources, in the layer they belong to: _speedups.c is one
            # translation unit that includes its parts (core/_*.h).
            ["src/utf8stream/core/_speedups.c", "src/utf8stream/core/_transcode.c"],
            depends=[
                f"src/utf8stream/core/{name}.h"
                for name in (
                    "_table37",
                    "_state",
                    "_decode",
                    "_simd",
                    "_feed",
                    "_stream",
                    "_lines",
                    "_units",
                    "_encoder",
                    "_iterator",
                    "_runs",
                    "_normpass",
                    "_moji",
                    "_mojirepair",
                    "_mojibytes",
                    "_transcode",
                    "_transcode_simd",
                    "_detect",
                )
            ],
            optional=True,
        ),
        # The follower's record type and read buffers: the apps layer's own extension.
        Extension(
            "utf8stream.apps._apps_speedups",
            ["src/utf8stream/apps/_apps_speedups.c"],
            optional=True,
        ),
    ],
)
