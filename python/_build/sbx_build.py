"""A PEP 517 build backend in the standard library, so ``pip install ./python`` works offline.

pip builds in an isolated environment and would fetch setuptools from PyPI for it; this
backend needs nothing, and the package is pure Python: the wheel is the ``sbx`` directory
plus the dist-info files.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_NAME = "sbx"
_TAG = "py3-none-any"


def _version() -> str:
    with open(os.path.join(_ROOT, "sbx", "__init__.py"), encoding="utf-8") as init:
        return re.search(r'^__version__ = "([^"]+)"', init.read(), re.M).group(1)


def _metadata() -> str:
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {_NAME}\nVersion: {_version()}\n"
        "Summary: Client and agent-framework adapters for the sbx sandbox server\n"
        "Requires-Python: >=3.9\n"
    )


def _package_files() -> list[str]:
    """The package's .py files, relative to the project root."""
    return sorted(
        f"sbx/{name}" for name in os.listdir(os.path.join(_ROOT, "sbx")) if name.endswith(".py")
    )


def _write_wheel(directory: str, files: dict[str, bytes]) -> str:
    dist_info = f"{_NAME}-{_version()}.dist-info"
    files[f"{dist_info}/METADATA"] = _metadata().encode()
    files[f"{dist_info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: sbx_build\nRoot-Is-Purelib: true\nTag: {_TAG}\n"
    ).encode()
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel_name = f"{_NAME}-{_version()}-{_TAG}.whl"
    with zipfile.ZipFile(os.path.join(directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
    return wheel_name


def get_requires_for_build_wheel(config_settings=None) -> list[str]:
    return []


get_requires_for_build_sdist = get_requires_for_build_editable = get_requires_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None) -> str:
    files = {}
    for name in _package_files():
        with open(os.path.join(_ROOT, name), "rb") as source:
            files[name] = source.read()
    return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None) -> str:
    """A wheel whose .pth file puts this source tree on sys.path."""
    return _write_wheel(wheel_directory, {f"{_NAME}.pth": (_ROOT + "\n").encode()})


def build_sdist(sdist_directory, config_settings=None) -> str:
    base = f"{_NAME}-{_version()}"
    names = ["pyproject.toml", "README.md", "_build/sbx_build.py", *_package_files()]
    with tarfile.open(os.path.join(sdist_directory, f"{base}.tar.gz"), "w:gz") as sdist:
        for name in names:
            sdist.add(os.path.join(_ROOT, name), f"{base}/{name}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        sdist.addfile(info, io.BytesIO(data))
    return f"{base}.tar.gz"
