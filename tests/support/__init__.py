"""Fixtures and helpers shared by the test modules (loaded as a pytest plugin from conftest.py)."""
