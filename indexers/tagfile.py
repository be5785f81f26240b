"""The code graph's tags of one file (`tag_file`), from a parse made as the chunker makes its
own, and the chunker's rule for the files it does not parse (`skip_parse_reason`).

Light to import: tree-sitter's registry and the tags extractor, not the chunker and the text
modules it brings. The tags worker process (`memserver.ingest.tagworker`) imports this and
little else: on the core it shares with the indexing, its start is that much shorter.
"""

from __future__ import annotations

from typing import Any

from indexers.languages import choose_parse
from indexers.treesitter import ERROR_SHARE_LIMIT
from indexers.treesitter import LANGUAGES as CODE_LANGUAGES
from indexers.treesitter.definitions import blank_rows, error_share
from indexers.treesitter.tags import extract_tags, parse
from memserver.core.graph import FileTags

__all__ = ["skip_parse_reason", "tag_file"]

# Minified code: definitions cannot be cut at line granularity, so skip the parse.
_MINIFIED_BYTES = 64_000
_MINIFIED_LINE = 1_000


def tag_file(path: str, text: str, language: str, max_parse_bytes: int) -> FileTags:
    """The code graph's tags of one file, from a parse made as the chunker makes its own:
    none for a file the chunker does not parse (not code, over `max_parse_bytes`, minified)
    or whose parse it rejects (too many syntax errors, in C and then C++). A function of its
    arguments only, so a worker process can run it beside the chunker. Never raises."""
    if language not in CODE_LANGUAGES:
        return FileTags(path, language)
    try:
        source = text.encode("utf-8", "replace")
        blank = blank_rows(text.split("\n"))
        if skip_parse_reason(blank, source, max_parse_bytes) is not None:
            return FileTags(path, language)

        def attempt(used: str) -> tuple[Any, float]:
            tree = parse(text, used, source)
            share = error_share(tree.root_node, blank)
            return (tree if share <= ERROR_SHARE_LIMIT else None), share

        chosen = choose_parse(language, text, path, attempt)
        if chosen is not None:
            return extract_tags(path, text, chosen[0], chosen[1], source)
    except Exception:  # the edge, as in `chunk`: a failure leaves the file without tags
        pass
    return FileTags(path, language)


def skip_parse_reason(blank: tuple[bool, ...], source: bytes, max_parse_bytes: int
                      ) -> str | None:  # fmt: skip
    """Why a file of these lines (`blank`: which are) and bytes is not parsed, or None."""
    if len(source) > max_parse_bytes:
        return f"file is {len(source)} bytes, over max_parse_bytes ({max_parse_bytes})"
    nonblank = max(1, sum(1 for b in blank if not b))
    if len(source) > _MINIFIED_BYTES and len(source) / nonblank > _MINIFIED_LINE:
        return f"minified code (lines average {len(source) // nonblank} bytes)"
    return None
