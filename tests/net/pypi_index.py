"""The package index of the small internet: a real wheel built with zipfile, and the PEP 503
"simple" pages that pip reads to find it. servers.py serves these on the index host.

  /simple/                 one link per project
  /simple/<project>/       one link per file: /packages/<file>#sha256=<hex>
  /packages/<file>         the file itself
  /top-pypi-packages-30-days.min.json
                           download counts per project, in the form of the public "top PyPI
                           packages" dataset ({"last_update", "rows": [{"download_count",
                           "project"}]}), for tasks that rank packages

Standard library only, so the same code runs under any python3 the harness uses.
"""

import base64
import hashlib
import html
import json
import os
import re
import zipfile

WHEEL_NAME = "sbx_test_pkg-1.0-py3-none-any.whl"
_DIST_INFO = "sbx_test_pkg-1.0.dist-info"
# Every entry gets this timestamp, so the wheel (and the sha256 tests compare) is the same
# in every run.
_EPOCH = (1980, 1, 1, 0, 0, 0)


TOP_PACKAGES_PATH = "/top-pypi-packages-30-days.min.json"
# Twelve projects, so that "the top 10" is a real cut; listed out of order, so that a client
# must rank them by download_count. Fixed counts: tests compare the ranking they expect.
TOP_PACKAGES = [
    ("certifi", 780_000_000), ("boto3", 1_310_000_000), ("typing-extensions", 970_000_000),
    ("urllib3", 1_020_000_000), ("setuptools", 830_000_000), ("botocore", 1_060_000_000),
    ("requests", 760_000_000), ("idna", 800_000_000), ("packaging", 870_000_000),
    ("charset-normalizer", 740_000_000), ("s3transfer", 920_000_000),
    ("python-dateutil", 750_000_000),
]


def top_packages_json():
    rows = [{"download_count": count, "project": name} for name, count in TOP_PACKAGES]
    return json.dumps({"last_update": "2026-01-01 00:00:00", "rows": rows}).encode()


def _record_hash(data):
    """RECORD's hash form (PEP 376/427): urlsafe base64 of the sha256, without padding."""
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(directory):
    """Writes directory/WHEEL_NAME (sbx_test_pkg with VALUE = 42) and returns its path."""
    files = {
        "sbx_test_pkg/__init__.py": b'"""Installed from the small internet\'s index."""\n'
                                    b"VALUE = 42\n",
        f"{_DIST_INFO}/METADATA": b"Metadata-Version: 2.1\nName: sbx-test-pkg\nVersion: 1.0\n"
                                  b"Summary: test package of the sbx small internet\n",
        f"{_DIST_INFO}/WHEEL": b"Wheel-Version: 1.0\nGenerator: sbx-small-internet\n"
                               b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in files.items())
    files[f"{_DIST_INFO}/RECORD"] = (record + f"{_DIST_INFO}/RECORD,,\n").encode()
    path = os.path.join(directory, WHEEL_NAME)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, data)
    return path


def normalize(name):
    """PEP 503 name normalisation: runs of -, _ and . become one -, lower case."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _page(title, links):
    anchors = "".join(f'<a href="{html.escape(href)}">{html.escape(text)}</a><br>\n'
                      for href, text in links)
    return (f"<!DOCTYPE html>\n<html><head><title>{html.escape(title)}</title></head>"
            f"<body>\n{anchors}</body></html>\n").encode()


class Index:
    """The pages of an index over the files in `directory` (read once, at start)."""

    def __init__(self, directory):
        self.files = {}
        for name in sorted(os.listdir(directory)):
            with open(os.path.join(directory, name), "rb") as f:
                self.files[name] = f.read()

    def projects(self):
        out = {}
        for name in self.files:
            out.setdefault(normalize(name.split("-", 1)[0]), []).append(name)
        return out

    def get(self, path):
        """(status, content type, body) for a path under /simple/ or /packages/, or the
        download counts at TOP_PACKAGES_PATH; None for any other path."""
        if path == TOP_PACKAGES_PATH:
            return 200, "application/json", top_packages_json()
        if path == "/simple/":
            links = [(f"/simple/{p}/", p) for p in sorted(self.projects())]
            return 200, "text/html", _page("Simple index", links)
        if path.startswith("/simple/"):
            project = path[len("/simple/"):].rstrip("/")
            files = self.projects().get(normalize(project))
            if files is None:
                return 404, "text/plain", b"no such project\n"
            links = [(f"/packages/{f}#sha256={hashlib.sha256(self.files[f]).hexdigest()}", f)
                     for f in files]
            return 200, "text/html", _page("Links for " + project, links)
        if path.startswith("/packages/"):
            data = self.files.get(path[len("/packages/"):])
            if data is None:
                return 404, "text/plain", b"no such file\n"
            return 200, "application/octet-stream", data
        return None
