"""The client's version, which is also the functions library's version it needs."""

__version__ = "0.1.0"
