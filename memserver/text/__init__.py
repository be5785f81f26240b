"""Shared text analysis: one leaf package every service may use (it imports only `core`).

- `terms`     identifier splitting, the BM25 analyser's words, stop words, query terms
- `sentences` sentences and the entities a text names (notes, claims, questions)
- `timeexpr`  relative and named dates (the sole dateparser importer)
- `passages`  what the dense model sees of a chunk
"""
