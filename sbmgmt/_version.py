"""The package's version, set in this one place (``sbmgmt.__version__``, the wheel's metadata,
``sbmgmt --version``, the telemetry's instrumentation scope)."""

__version__ = "0.1.0"
