"""The tags worker process that `ingest.tagging` starts beside the chunker: jobs in on stdin
(and the languages to expect, `HINT`; a first index's files to tag before their jobs come,
`AHEAD`), each file's tags in row form (`store.graphpart`) out, until the input ends.

It imports what tagging a file takes and nothing more (`indexers.tagfile`: tree-sitter and
the tags extractor; the row form): not the chunker, the text modules, the store nor Arrow
(reading and masking files ahead imports the reader and the secrets' masks, when asked).
Its start is CPU time on the core it shares with the indexing: 0.048 s (interpreter and
imports) instead of 0.072 s when it imported the chunker's modules; its CPU for click's 65
files 0.49 s instead of 0.53 (getrusage, three runs each).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import pickle
import sys
from collections.abc import Iterator
from typing import cast

from indexers.tagfile import tag_file
from indexers.treesitter import LANGUAGES as CODE_LANGUAGES
from indexers.treesitter.registry import tags_queries
from memserver.store.graphpart import graph_part

__all__ = [
    "AHEAD", "HINT", "PIPE_BYTES", "Ahead", "Inbox", "Job", "messages", "room_in", "rows",
    "send", "serve_stdio", "widen",
]  # fmt: skip

Job = tuple[str, str, str]  # (path, text, language)
# A message (HINT, [language, ...]) asks for those languages' tags queries now, before their
# files come: compiling them is most of a worker's start (Python's 0.03 s), and a worker
# started early waits for its first jobs while the run reads its files. Nothing answers it.
HINT = "languages"
# A message (AHEAD, Ahead) asks for the tags of a run's files before their jobs come
# (`_tag_ahead`): the root's real path, the largest file read, the largest file parsed, and
# each code file as (path, absolute path, language), in the walk's order; (AHEAD, None)
# drops what was made ahead (the run is done).
AHEAD = "ahead"
Ahead = tuple[str, int, int, list[tuple[str, str, str]]]


def rows(job: Job, max_parse_bytes: int) -> object:
    """A file's tags in row form (`store.graphpart.GraphPart`)."""
    return graph_part(tag_file(*job, max_parse_bytes))


_HEADER = 8  # a message's length, little-endian, before its pickled bytes
_READ = 1 << 20  # the most one read takes from a pipe
PIPE_BYTES = 1 << 20  # what a pipe holds (Linux's default limit for a user's pipes)


def widen(fd: int) -> None:
    """Let the pipe at `fd` hold `PIPE_BYTES` (64 KiB by default) where the system allows
    (Linux): a writer then rarely waits for its reader. In the indexing process each such
    wait ends with its feeding or reading thread waiting for Python's lock again (up to
    5 ms while the process is busy), and the worker waits with it."""
    with contextlib.suppress(ImportError, AttributeError, OSError):  # fcntl: not on Windows
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)


def room_in(fd: int) -> int:
    """What the pipe at `fd` holds (Linux says; elsewhere the least a pipe holds, 4 KiB)."""
    with contextlib.suppress(ImportError, AttributeError, OSError):  # fcntl: not on Windows
        import fcntl

        return int(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))
    return 4096


def send(fd: int, value: object) -> None:
    """One message: its length, then its pickled bytes, in as few writes as the pipe takes."""
    data = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    view = memoryview(len(data).to_bytes(_HEADER, "little") + data)
    while view:
        view = view[os.write(fd, view) :]


class Inbox:
    """The messages `send` wrote to a pipe's read end, each as soon as its last byte is
    read, until the writer closes its end (iterate). Reads take whatever the pipe holds (up
    to `_READ`), not a buffer's worth at a time: few reads, so few waits for Python's lock
    in a busy process. A message cut short raises `EOFError`."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.held = bytearray()  # read, not yet given

    def __iter__(self) -> Iterator[object]:
        held = self.held
        while True:
            data = os.read(self.fd, _READ)
            if not data:
                if held:
                    raise EOFError("a message was cut short")
                return
            held += data
            while len(held) >= _HEADER:
                size = int.from_bytes(held[:_HEADER], "little")
                if len(held) < _HEADER + size:
                    break
                message = pickle.loads(memoryview(held)[_HEADER : _HEADER + size])
                del held[: _HEADER + size]  # before it is given: `waiting` sees what is next
                yield message

    def waiting(self) -> bool:
        """Whether more has come (or its end): what iterating would read next without
        waiting. True where the pipe cannot be asked."""
        if self.held:
            return True
        try:
            import select

            return bool(select.select([self.fd], [], [], 0)[0])
        except (ImportError, OSError, ValueError):  # not a pipe `select` takes (Windows)
            return True


def messages(fd: int) -> Iterator[object]:
    """`Inbox(fd)`'s messages."""
    return iter(Inbox(fd))


def _serve(source: int, sink: int) -> None:
    """The worker's loop: a chunk of jobs in, their tags out, until the input ends."""
    parent = os.getppid()
    inbox = Inbox(source)
    ahead: dict[tuple[str, str, int], tuple[bytes, object]] = {}  # `_tag_ahead`'s
    for message in inbox:
        if isinstance(message, tuple) and message[:1] == (HINT,):
            _compile(cast(list[str], message[1]))
            continue
        if isinstance(message, tuple) and message[:1] == (AHEAD,):
            ahead.clear()  # an earlier run's, left; (AHEAD, None): only that
            if message[1] is not None:
                _tag_ahead(cast(Ahead, message[1]), ahead, inbox, parent)
            continue
        max_parse_bytes, jobs = cast(tuple[int, list[Job]], message)
        answers = []
        for job in jobs:
            if os.getppid() != parent:  # the indexing process is gone (killed): so are we
                return
            made = ahead.pop((job[0], job[2], max_parse_bytes), None) if ahead else None
            if made is not None and made[0] == _digest(job[1]):  # tagged ahead, same text
                answers.append(made[1])
            else:
                answers.append(rows(job, max_parse_bytes))
        send(sink, answers)


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _tag_ahead(
    ahead: Ahead, made: dict[tuple[str, str, int], tuple[bytes, object]], inbox: Inbox,
    parent: int,
) -> None:  # fmt: skip
    """Read, mask and tag the files of a run that will cut them all (a first index), in the
    walk's order, before the run asks: while it opens its stores (most of a fresh process's
    first half second) this core is free. Each file's tags are kept with a digest of the
    text they were made from: a job of the same path and text is answered with them (the
    text is the run's own read, so a file changed meanwhile is tagged again). Stops once
    anything else comes: the run's jobs are answered first, from what was made by then."""
    from indexers.walk import read_source
    from memserver.text.secrets import mask_code

    root, cap, max_parse_bytes, files = ahead
    for path, abs_path, language in files:
        if inbox.waiting() or os.getppid() != parent:
            return
        with contextlib.suppress(Exception):  # a file that cannot be read: the run says why
            found = read_source(root, path, abs_path, cap)
            if isinstance(found, str):
                continue
            text = mask_code(found[1], language, path)[0]  # as the run masks it
            key = (path, language, max_parse_bytes)
            made[key] = (_digest(text), rows((path, text, language), max_parse_bytes))


def _compile(languages: list[str]) -> None:
    """The tags queries of these languages, compiled (and kept) now; a name that is not a
    code language, or whose query fails, is left to `tag_file` (which tags around it)."""
    for name in languages:
        if name in CODE_LANGUAGES:
            with contextlib.suppress(Exception):
                tags_queries(name)


# When the worker's collector runs: after 20,000 new objects instead of 700, the modules it
# imported left out of its full collections (`gc.freeze`). A file's tags are small objects
# without cycles, freed by their counts once its answer is made: tagging Django 3.2's
# 2,796 code files, 1,668 collections freed 0 objects, and on mongoose they were 7 % of the
# worker's CPU (0.66 s against 0.62 s for its 301 files, medians of 5; 2 % on click and
# cobra). A cycle is still collected, only later.
_COLLECT_AFTER = (20_000, 50, 100)


def serve_stdio() -> None:
    """The worker process: jobs on stdin, answers on (a copy of) stdout."""
    gc.freeze()
    gc.set_threshold(*_COLLECT_AFTER)
    sink = os.dup(1)  # the answers' channel, and nothing else
    os.dup2(2, 1)  # whatever prints goes to stderr
    sys.stdout = sys.stderr
    try:
        with contextlib.suppress(BrokenPipeError, KeyboardInterrupt, EOFError):
            _serve(sys.stdin.fileno(), sink)
    finally:
        os.close(sink)
