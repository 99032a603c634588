"""The version of jitdtypes, in a module that imports nothing: cache keys and the command line read it without
importing the package's rooms."""

__version__ = "0.1.0"
