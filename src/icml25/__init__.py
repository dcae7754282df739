"""icml25: reference implementations and claim checks for 38 ICML 2025 papers."""

__version__ = "0.1.0"
