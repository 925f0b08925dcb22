"""Ranking, query analysis and (later) embedders."""
