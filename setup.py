"""Build and install the Spline toolkit's analysis package.

The Python package `spline_analysis` lives in `analysis/`. Each directory
`analysis/_native/<name>/` holding C sources becomes one compiled extension
`spline_analysis._<name>`, built with the system C compiler: the hot loops
(decoding, the TCP state machines) run there, everything else is Python.
"""
from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).resolve().parent
NATIVE = HERE / "analysis" / "_native"


def native_extensions() -> list:
    extensions = []
    for source_dir in sorted(p for p in NATIVE.iterdir() if p.is_dir()):
        sources = sorted(str(p.relative_to(HERE)) for p in source_dir.glob("*.c")
                         if not p.name.startswith("fuzz_"))
        if not sources:
            continue
        extensions.append(Extension(
            f"spline_analysis._{source_dir.name}",
            sources=sources,
            include_dirs=[str(source_dir.relative_to(HERE)), str(NATIVE.relative_to(HERE))],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter"],
        ))
    return extensions


setup(
    name="spline-toolkit",
    version="0.1.0",
    description="TCP congestion-control forensics: capture, decode and analyse TCP transfers",
    long_description=(HERE / "README.md").read_text(encoding="utf-8") if (HERE / "README.md").exists() else "",
    long_description_content_type="text/markdown",
    license="GPL-2.0-only",
    python_requires=">=3.9",
    packages=["spline_analysis"] + [f"spline_analysis.{p.name}" for p in sorted((HERE / "analysis").iterdir())
                                    if p.is_dir() and (p / "__init__.py").exists()],
    package_dir={"spline_analysis": "analysis"},
    package_data={"spline_analysis": ["py.typed", "report.schema.json"]},
    ext_modules=native_extensions(),
    install_requires=["numpy>=1.22", "pandas>=1.5"],   # pandas: imported only for --interval and tables
    extras_require={
        "dataframe": ["pyarrow>=10"],
        "plot": ["matplotlib>=3.5"],
        "vm": ["virtme-ng>=1.42"],      # spline-testbed run --vm: a stock kernel under QEMU
        "test": ["pytest>=7", "virtme-ng>=1.42", "pandas>=1.5", "pyarrow>=10", "matplotlib>=3.5", "scapy>=2.5",
                 "nbclient>=0.7", "nbformat>=5", "ipykernel>=6", "jsonschema>=4"],
        "bench": ["dpkt>=1.9", "scapy>=2.5"],
    },
    entry_points={"console_scripts": [
        "spline-analyze=spline_analysis._core.cli:run",
        "spline-testbed=spline_analysis.testbed.cli:main",
    ]},
)
