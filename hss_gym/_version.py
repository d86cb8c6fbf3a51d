"""hss-gym's version, in a module that imports nothing, so that any module can record it in
provenance without importing the package's ``__init__`` (and what that imports) first.

pyproject.toml's ``version`` is what packaging reads; the two are kept equal (a test checks).
"""

__version__ = "0.15.0"
