"""Recall: candidate arms, fusion, packing."""
