"""Indexing: files → chunks → diff → store → embed."""
