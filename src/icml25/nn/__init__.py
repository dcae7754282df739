"""Neural-network building blocks shared by several papers.

Import the submodule you need; this package re-exports nothing.
"""
