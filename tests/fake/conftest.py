"""The fake namespace's fixtures, imported here while the package is not pip-installed."""

from fakes.pytest_plugin import fake_namespace, fake_namespace_factory

__all__ = ["fake_namespace", "fake_namespace_factory"]
