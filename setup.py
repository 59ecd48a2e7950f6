"""Build the Spline toolkit's C extensions (the metadata is in pyproject.toml).

The Python package `spline_analysis` lives in `analysis/`. Each directory
`analysis/_native/<name>/` holding C sources becomes one compiled extension
`spline_analysis._<name>`, built with the system C compiler: the hot loops
(decoding, the TCP state machines) run there, everything else is Python.
Its headers, and those shared in `analysis/_native/`, are its dependencies:
editing one rebuilds the extension.
"""

from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).resolve().parent
NATIVE = HERE / "analysis" / "_native"


def relative(paths) -> list:
    return sorted(str(p.relative_to(HERE)) for p in paths)


def native_extensions() -> list:
    extensions = []
    for source_dir in sorted(p for p in NATIVE.iterdir() if p.is_dir()):
        sources = relative(p for p in source_dir.glob("*.c") if not p.name.startswith("fuzz_"))
        if not sources:
            continue
        extensions.append(
            Extension(
                f"spline_analysis._{source_dir.name}",
                sources=sources,
                depends=relative([*source_dir.glob("*.h"), *NATIVE.glob("*.h")]),
                include_dirs=[str(source_dir.relative_to(HERE)), str(NATIVE.relative_to(HERE))],
                extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            )
        )
    return extensions


setup(
    packages=["spline_analysis"]
    + [
        f"spline_analysis.{p.name}"
        for p in sorted((HERE / "analysis").iterdir())
        if p.is_dir() and (p / "__init__.py").exists()
    ],
    ext_modules=native_extensions(),
)
