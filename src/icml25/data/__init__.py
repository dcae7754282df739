"""Data that needs no download: made here (simulators, procedural images) or shipped with a package.

Import the submodule you need (``icml25.data.corpora``, ``icml25.data.pde``, ...); this package
re-exports nothing, so importing one kind of data never imports the libraries of another.
"""
