"""The package version (read by hatchling for the wheel's metadata)."""

__version__ = "0.1.0"
