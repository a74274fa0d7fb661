"""Tests of the pytest plugin (wirebroker/pytest_plugin.py) and wirebroker.testing: pytester
runs throwaway test files in a pytest subprocess, as a user's project would run them."""

from __future__ import annotations

pytest_plugins = ["pytester"]
