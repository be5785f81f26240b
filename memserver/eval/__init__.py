"""Benchmark runners and metrics (`memserver eval ...`)."""
