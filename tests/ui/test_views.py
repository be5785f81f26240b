"""The stale diff reads the file on disk only where indexing would read it now."""

from __future__ import annotations

from memserver.ui.views import date_param, span_diff, undo_label


def _closed_cited_chunk(engine, scenario):  # type: ignore[no-untyped-def]
    detail = engine.browser().memory(scenario.stale_memory)
    [closed] = [s.chunk for s in detail.sources if not s.current]
    return closed


def test_the_diff_is_of_the_cited_span_against_the_same_function_on_disk(engine, scenario
                                                                         ) -> None:  # fmt: skip
    chunk = _closed_cited_chunk(engine, scenario)
    d = span_diff(engine, engine.browser(), chunk)
    assert d.on_disk is not None and d.note == "the cited lines changed on disk"
    assert ("del", "-    rate = min(rate, 0.5)") in d.lines
    assert ("add", "+    rate = min(rate, 0.4)") in d.lines


def test_a_deleted_file_shows_the_indexed_lines_as_gone(engine, scenario) -> None:
    chunk = _closed_cited_chunk(engine, scenario)
    (scenario.root / "src" / "billing.py").unlink()
    d = span_diff(engine, engine.browser(), chunk)
    assert d.on_disk is None and "gone" in d.note
    assert all(kind in ("file", "hunk", "del") for kind, _ in d.lines)


def test_a_file_since_ignored_is_not_read(engine, scenario) -> None:
    chunk = _closed_cited_chunk(engine, scenario)
    (scenario.root / ".memserverignore").write_text("src/billing.py\n")
    d = span_diff(engine, engine.browser(), chunk)
    assert d.lines == () and "no longer indexed" in d.note


def test_dates_and_undo_labels() -> None:
    assert date_param("2025-03-01", end_of_day=True).isoformat().startswith("2025-03-01T23:59")
    assert date_param("") is None

    class R:  # the fields undo_label reads
        def __init__(self, op: str, targets: tuple[str, ...], reason: str = "") -> None:
            self.undone_by = ""
            self.event = type("E", (), {"op": op, "targets": targets, "reason": reason,
                                        "after": ""})()  # fmt: skip

    assert undo_label(R("keep", ("m_a", "m_b"))) == "Undo keep"
    assert undo_label(R("forget", ("m_a",))) == "Bring back"
    assert undo_label(R("forget", ("m_a",), "x (erased)")) is None
    assert undo_label(R("forget", ("c_a", "m_a"))) is None
    assert undo_label(R("add", ("c_a",))) is None
