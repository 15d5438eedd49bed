"""The version of the framework, on the ground floor so any layer can name it."""

__version__ = "0.2.0"
