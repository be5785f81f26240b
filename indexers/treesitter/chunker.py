"""Source code → pieces with tree-sitter: parse, judge the errors, find definitions, cut.

Returns pieces, or None with a reason when the file should fall back to line windows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from indexers.text import Lines, Piece
from indexers.treesitter.definitions import ERROR_SHARE_LIMIT, error_share, find_definitions
from indexers.treesitter.macros import parsed_source
from indexers.treesitter.registry import grammar
from indexers.treesitter.split import Emitter, Scope
from memserver.core.types import ChunkOptions

if TYPE_CHECKING:
    from tree_sitter import Tree


def code_pieces(
    lines: Lines,
    source: bytes,
    language: str,
    options: ChunkOptions,
) -> tuple[list[Piece] | None, str | None, Tree]:
    """(pieces, note, tree) for a registered language; (None, reason, tree) when the parse is
    not usable.

    `source` is the file's text encoded as UTF-8 (its rows must match `lines`). A note, when
    set, says which parts were cut into line windows (nesting too deep to follow). The tree
    is the parse they were cut from (the code graph's tags are read from it too).
    """
    from tree_sitter import Parser

    loaded = grammar(language)
    tree = Parser(loaded.language).parse(parsed_source(language, source))
    root = tree.root_node
    share = error_share(root, lines.blank)
    if share > ERROR_SHARE_LIMIT:
        return None, f"too many syntax errors ({share:.0%} of the file)", tree
    definitions = find_definitions(root, loaded.query)
    emitter = Emitter(lines, options, definitions)
    pieces = emitter.region(1, len(lines), definitions, Scope())
    note = None
    if emitter.notes:
        more = f" (and {len(emitter.notes) - 1} more)" if len(emitter.notes) > 1 else ""
        note = f"{emitter.notes[0]}{more}; cut into line windows"
    return pieces, note, tree


__all__ = ["code_pieces"]
