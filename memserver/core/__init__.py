"""Core types, protocols and errors: standard library only."""
