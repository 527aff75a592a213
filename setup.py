"""Build hook for the one C extension (qa._crawlscan); all metadata lives in pyproject.toml.

The extension is optional: if it cannot be compiled, the install still succeeds and
qa.crawllog_aggregate falls back to its polars path with a warning.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "qa._crawlscan",
            sources=["qa/_crawlscan.c"],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ]
)
