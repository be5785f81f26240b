"""Tree-sitter chunking of source code; queries live in queries/<language>.scm as data."""

from indexers.treesitter.chunker import ERROR_SHARE_LIMIT, code_pieces
from indexers.treesitter.registry import LANGUAGES, grammar
from indexers.treesitter.split import MAX_DEPTH

__all__ = ["ERROR_SHARE_LIMIT", "LANGUAGES", "MAX_DEPTH", "code_pieces", "grammar"]
