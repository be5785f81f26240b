"""Turning files, notes and conversations into chunks; imports only memserver.core."""
