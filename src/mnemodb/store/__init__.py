"""Persistence behind a narrow interface; all SQL lives in this package."""
