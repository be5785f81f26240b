"""Tree-sitter chunking of source code; queries live in queries/<language>.scm as data.

The package itself holds only what needs no chunker (the registry, the parse-error limit):
the tags worker process imports it and `tags` without `chunker`, `split` and the text
modules they bring (see `indexers.tagfile`)."""

from indexers.treesitter.definitions import ERROR_SHARE_LIMIT
from indexers.treesitter.registry import LANGUAGES, grammar

__all__ = ["ERROR_SHARE_LIMIT", "LANGUAGES", "grammar"]
