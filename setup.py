"""Build hook for the C extensions; all metadata lives in pyproject.toml.

- qa._crawlscan: the crawl.log scanner (qa.crawlscan);
- indexing._gzmember: whole gzip members inflated by libdeflate (indexing.warcscan), built
  against the system's libdeflate (Debian: libdeflate-dev, which ./run installs).

Both are optional: if one cannot be compiled, the install still succeeds and its caller falls
back to its pure-Python path (qa.crawllog_aggregate's polars path with a warning; indexing's
streaming ISA-L inflate).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "qa._crawlscan",
            sources=["qa/_crawlscan.c"],
            extra_compile_args=["-O3"],
            optional=True,
        ),
        Extension(
            "indexing._gzmember",
            sources=["indexing/_gzmember.c"],
            libraries=["deflate"],
            extra_compile_args=["-O3"],
            optional=True,
        ),
    ]
)
