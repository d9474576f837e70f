"""Build step for the one compiled module, ``skitter._speedups`` (Cython). Everything else is in
pyproject.toml. The module is optional: without a C compiler the install still succeeds and
skitter runs its Python versions of the same code (``skitter.parse``, ``skitter.dedup``)."""

from setuptools import Extension, setup

try:
    from Cython.Build import cythonize
except ImportError:  # no Cython (pyproject.toml asks for it at build time): pure Python
    ext_modules = []
else:
    ext_modules = cythonize(
        [Extension("skitter._speedups", ["src/skitter/_speedups.pyx"], optional=True)],
        compiler_directives={"language_level": 3},
    )

setup(ext_modules=ext_modules)
