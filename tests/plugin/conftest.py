"""Tests of the pytest plugin (wirebroker/pytest_plugin.py) and wirebroker.testing: pytester
runs throwaway test files in a pytest subprocess, as a user's project would run them
(pytester is loaded for the whole suite by pyproject.toml's addopts: pytest refuses
`pytest_plugins` in a conftest below the rootdir)."""
