"""The client's tests, a package so that they import their helpers relatively (`from .servers import ...`)."""
