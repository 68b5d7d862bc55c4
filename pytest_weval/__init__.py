"""pytest-weval: Weval blueprints as pytest test files."""

__version__ = "0.1.0"
