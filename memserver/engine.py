"""The composition root: Settings → concrete parts. The one place that wires things.

Heavy modules (LanceDB, tantivy, the models) are imported inside the factories, so
`memserver --help` stays fast; the factories' return types name them for the type checker.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memserver.config import Settings, load_settings
from memserver.core import cpuload  # noqa: F401  (its first sample: the process's start)
from memserver.core.errors import IndexMismatch, ModelUnavailable, PathError, StoreError
from memserver.core.ids import content_hash
from memserver.core.protocols import LLM, CodeGraph, Distiller, Embedder, Progress, Reranker
from memserver.core.types import GitState, IndexReport, PathSet, Skip, Status, WalkResult
from memserver.embed import QUERY_CHARS, embedder_identity, make_embedder
from memserver.retrieve.gate import gate_for
from memserver.store import statecache
from memserver.store.meta import read_meta
from memserver.text.passages import passages_id

# bumped when an index gains a part older indexes lack (2: the whole-file keyword index,
# 3: the code graph's tables, 4: references without ids): a run then skips the stat cache's
# "nothing changed", and reconciling adds (or makes again) the part
STORE_LAYOUT = 4

if TYPE_CHECKING:
    from indexers.chunking import FileChunker
    from indexers.watcher import Watcher
    from memserver.ingest.live import LiveIndex
    from memserver.ingest.pipeline import Indexer
    from memserver.memory.consolidate import Consolidator
    from memserver.memory.service import MemoryService
    from memserver.navigate.service import Navigator
    from memserver.navigate.view import GraphView
    from memserver.retrieve.attribute import Attributor
    from memserver.retrieve.longquery import FileOrder
    from memserver.retrieve.recall import Expander, Recaller
    from memserver.store.browse import Browser
    from memserver.store.doctor import Check, DoctorReport
    from memserver.store.index import IndexStore
    from memserver.tokens import Cl100kCounter


FORGOTTEN = "forgotten (memserver forget)"


def recorded_root(index_dir: str | Path) -> str | None:
    """The project folder the index at `index_dir` was built from, when it records one that
    is still a folder (None: no index there, an unreadable one, or its project is gone)."""
    try:
        meta = read_meta(Path(index_dir).expanduser())
    except StoreError:
        return None
    if meta is None or not meta.root or not Path(meta.root).is_dir():
        return None
    return meta.root


def _same_folder(a: Path, b: Path) -> bool:
    """Whether two paths are one folder (on a case-insensitive disk, `Proj` is `proj`)."""
    try:
        return a.samefile(b)
    except OSError:
        return False


def resolve_root(root: str | Path | None) -> Path:
    path = Path(root or ".").expanduser()
    if not path.exists():
        raise PathError(f"{path} does not exist", hint="pass the project folder as PATH or --root")
    if not path.is_dir():
        raise PathError(f"{path} is not a directory", hint="pass the project folder, not a file")
    return path.resolve()


class Engine:
    """Everything a command needs for one project root and one index directory."""

    def __init__(
        self,
        root: str | Path | None = None,
        index_dir: str | Path | None = None,
        *,
        overrides: Mapping[str, Mapping[str, Any]] | None = None,
        env: Mapping[str, str] | None = None,
        embedder_flag: str | None = None,
    ) -> None:
        # whether the project was named (else the current folder, or with an index named
        # alone, the folder that index holds: `root_from_index`)
        self.root_given = root is not None
        self.root_from_index = False
        if root is None and index_dir:  # an index named, its project not: the one it holds
            index_dir = Path(index_dir).expanduser().absolute()  # named from here
            root = recorded_root(index_dir)
            self.root_from_index = root is not None
        self.root = resolve_root(root)
        settings = load_settings(self.root, env=env, overrides=overrides)
        chosen = Path(index_dir).expanduser() if index_dir else Path(settings.index.dir)
        self.index_dir = (chosen if chosen.is_absolute() else self.root / chosen).resolve()
        self.own_index = self.index_dir == (self.root / settings.index.dir).resolve()
        try:
            meta = read_meta(self.index_dir)
        except StoreError:
            meta = None  # reported by whichever command opens the store (or fixed by --rebuild)
        # the project the index holds, when it is gone from where the index says and no
        # project was named: the commands work on the current folder meanwhile
        self.held_gone = ""
        if meta is not None and not self.root_given and meta.root != str(self.root):
            self.held_gone = "" if meta.root and Path(meta.root).is_dir() else meta.root
        if embedder_flag:
            settings = dataclasses.replace(
                settings, embedding=dataclasses.replace(settings.embedding, model=embedder_flag)
            )
        self.configured_embedding = settings.embedding  # flag or config, not the index's
        self.embedder_forced = bool(embedder_flag)
        if not embedder_flag and meta is not None:  # an index keeps the embedder that built it
            settings = dataclasses.replace(
                settings, embedding=dataclasses.replace(settings.embedding, model=meta.embedder)
            )
        # the answerability gate fitted for that model and memory setting (the gate reads
        # its cosines of the chunks and of the memories that have a vector)
        settings = dataclasses.replace(
            settings,
            recall=gate_for(
                settings.recall, settings.embedding.model, settings.index.memory_vectors
            ),
        )
        self.settings: Settings = settings
        self.project = (meta.project if meta else "") or settings.project.name or self.root.name
        self.env = env

    @property
    def lock_timeout(self) -> float:
        return self.settings.index.lock_timeout_seconds

    @cached_property
    def tokens(self) -> Cl100kCounter:
        from memserver.tokens import default_counter

        return default_counter()

    @cached_property
    def embedder(self) -> Embedder | None:
        """The indexing model: it may download the model once (the recall path never does)."""
        return make_embedder(self.settings.embedding, download=True)

    @cached_property
    def query_embedder(self) -> Embedder | None:
        """The same model with its own, single-threaded session for the recall path."""
        emb = self.settings.embedding
        return make_embedder(dataclasses.replace(emb, threads=emb.query_threads, sessions=1))

    @cached_property
    def watch_embedder(self) -> Embedder | None:
        """The same model with `[watch] embed_threads` threads, for the watcher's batches."""
        emb = self.settings.embedding
        return make_embedder(
            dataclasses.replace(emb, threads=self.settings.watch.embed_threads, sessions=1),
            download=True,
        )

    def embedder_identity(self) -> tuple[str, int]:
        return embedder_identity(self.settings.embedding)

    def walk(self, only: PathSet | None = None) -> WalkResult:
        """The files to index; with `only`, just those paths (and what is under them). Files
        `forget` removed are left out and listed as skipped ("forgotten")."""
        from indexers.walk import walk
        from memserver.core.requests import forget_matcher
        from memserver.store.forgotten import load_rules

        inside = [str(self.index_dir)] if self.index_dir.is_relative_to(self.root) else []
        walked = walk(self.root, self.settings.index.walk_options(), ignore_dirs=inside,
                      only=only)  # fmt: skip
        rules = load_rules(self.index_dir)
        if not rules:
            return walked
        gone = forget_matcher(rules)
        kept = tuple(f for f in walked.files if not gone(f.path))
        skipped = [*walked.skipped, *(Skip(f.path, FORGOTTEN) for f in walked.files
                                      if gone(f.path))]  # fmt: skip
        return WalkResult(kept, tuple(sorted(skipped, key=lambda s: s.path)))

    def chunker(self) -> FileChunker:
        from indexers.chunking import FileChunker

        return FileChunker(self.settings.chunking, self.tokens)

    def distiller(self) -> Distiller:
        """The deterministic distiller, or the LLM one (falling back to it) when enabled."""
        import os

        from memserver.ingest.distill import HeuristicDistiller

        fallback = HeuristicDistiller()
        if not self.settings.llm.enabled:
            return fallback
        from memserver.llm import LlmDistiller, llm_from_settings

        llm = llm_from_settings(self.settings.llm, os.environ if self.env is None else self.env)
        if llm is None:
            return fallback
        cache = self.settings.llm.resolve_cache_dir(self.root, self.index_dir)
        return LlmDistiller(llm, fallback, cache)

    def reranker(self) -> tuple[Reranker | None, str]:
        """(reranker or None, a status line saying why not)."""
        from memserver.embed.rerank import make_reranker

        r = self.settings.rerank
        return make_reranker(
            r.model, r.cache_dir or None, r.enabled and self.embedder is not None,
            max_chars=r.max_chars, batch_size=r.batch_size, threads=r.threads or None,
        )  # fmt: skip

    def chunker_id(self) -> str:
        """The chunker's and the code graph's versions, the grammars' package version and
        the chunking settings: an index cut or tagged by others is cut again (chunks that
        come out the same keep their ids and vectors; every file's graph is made anew)."""
        from indexers.chunking import CHUNKER_VERSION
        from indexers.treesitter.registry import grammars_version
        from memserver.core.graph import GRAPH_VERSION

        settings = content_hash(repr(self.settings.chunking))[:12]
        return f"v{CHUNKER_VERSION}-g{GRAPH_VERSION}-p{grammars_version()}-{settings}"

    # -- stores ----------------------------------------------------------------

    def open_store(self) -> IndexStore:
        from memserver.store.index import IndexStore

        name, dim = self.embedder_identity()
        return IndexStore.open(self.index_dir, name, dim)

    def writable_store(self, rebuild: bool = False) -> IndexStore:
        from memserver.ingest.git import exclude_from_git
        from memserver.store.index import IndexStore
        from memserver.tokens import Cl100kCounter

        name, dim = self.embedder_identity()
        if rebuild and self.index_dir.exists():
            shutil.rmtree(self.index_dir / "lance", ignore_errors=True)
            shutil.rmtree(self.index_dir / "bm25", ignore_errors=True)
            (self.index_dir / "meta.json").unlink(missing_ok=True)
        store = IndexStore.create_or_open(
            self.index_dir, name, dim, self.project, str(self.root), Cl100kCounter.name
        )
        exclude_from_git(self.root, self.index_dir)
        store.ann_min_rows = self.settings.recall.ann_min_rows
        return store

    # -- commands ----------------------------------------------------------------

    def index(
        self, *, rebuild: bool = False, embed: bool = True, progress: Progress | None = None,
        ci: bool = False,
    ) -> IndexReport:  # fmt: skip
        """Index the tree incrementally. `ci`: no stat cache; compact the tables and drop
        their old versions at the end, so the index is small and ready to export."""
        from memserver.ingest.git import head

        report = IndexReport(root=str(self.root), index_dir=str(self.index_dir))
        walked = self.walk()
        if not walked.files and not (self.index_dir / "meta.json").exists():
            raise PathError(
                f"nothing to index under {self.root}: no text or source files "
                f"({len(walked.skipped)} skipped)",
                hint="check the path, or see why files are skipped with "
                "`memserver index --dry-run`",
            )
        started = time.monotonic()
        git = head(self.root)
        name, dim = self.embedder_identity()
        key = (f"{name}|{dim}|{self.chunker_id()}|{git[0]}|{git[1]}|layout {STORE_LAYOUT}"
               f"|root {self.root}"
               f"|memory vectors {self.settings.index.memory_vectors}"
               f"|{passages_id(self.settings.embedding.max_chars)}")  # fmt: skip
        saved = None if rebuild or ci else statecache.unchanged(self.index_dir, key, walked.files)
        if saved and saved.get("chunks_unembedded") == 0:
            report.skipped.update({s.path: s.reason for s in walked.skipped})
            report.files_unchanged = len(walked.files)
            report.chunks_total = int(saved.get("chunks_total", 0))
            report.embedder = name
            report.seconds = report.seconds_to_search = time.monotonic() - started
            return report
        statecache.forget(self.index_dir)
        from memserver.ingest.tagging import early_worker

        # a tags worker boots while the stores open (most of a fresh process's wait), and
        # on a first index, when every file will be cut, tags them meanwhile
        first = rebuild or not (self.index_dir / "meta.json").exists()
        ahead = (os.path.realpath(self.root), self.settings.index.max_file_bytes,
                 self.settings.chunking.max_parse_bytes) if first else None  # fmt: skip
        with early_worker(walked.files, self.settings.index.graph_workers, ahead):
            if not first:
                from memserver.store.index import drop_reshaped_graph

                drop_reshaped_graph(self.index_dir, self.lock_timeout)  # older: again
            store = self.writable_store(rebuild)
            report.embedder = store.meta.embedder
            self.run_index(store, walked, report, git=git, progress=progress, embed=embed)
        if ci:
            store.vacuum()
        else:
            statecache.save(self.index_dir, key, walked.files, report.to_dict())
        return report

    def run_index(
        self, store: IndexStore, walked: WalkResult, report: IndexReport, *,
        git: tuple[str, str], progress: Progress | None = None,
        embedder: Embedder | None = None, only: PathSet | None = None, embed: bool = True,
        optimize: bool = True, trust_marker: bool = False,
        stop_embedding: Callable[[], bool] | None = None,
    ) -> IndexReport:  # fmt: skip
        """One run over `walked` under the writer lock: `memserver index` and each of the
        watcher's batches."""
        report.skipped.update({s.path: s.reason for s in walked.skipped})
        with store.lock(self.lock_timeout):
            self._claim(store)
            indexer = self.indexer(store, progress=progress, git=git, embedder=embedder)
            return indexer.run(
                walked.files, report, embed=embed, only=only, optimize=optimize,
                trust_marker=trust_marker, stop_embedding=stop_embedding,
            )  # fmt: skip

    def check_claim(self, held: str) -> None:
        """Whether this tree may be indexed into an index that holds the tree at `held`. An
        index holds one project: indexing another tree into it would remove every file
        of the one it holds (their chunks closed, the memories about them stale). Allowed
        when the index is this tree's own (`<root>/.memserver`, or one named with the tree)
        and the project it holds is neither around this tree nor in it (a copy, or the
        project moved, its index with it), or when that project is gone from where the
        index says (or it says nowhere) and this tree was named (it moved); refused
        otherwise."""
        here = str(self.root)
        if held == here:
            return
        was = Path(held).resolve() if held else None
        if was is not None and (was == self.root or _same_folder(was, self.root)):
            return
        carried = (self.own_index or self.root_given) and (
            self.index_dir.is_relative_to(self.root)
            and was is not None
            and not (was.is_relative_to(self.root) or self.root.is_relative_to(was))
        )  # the index in this tree, the project it holds neither around it nor in it
        gone = was is None or not was.is_dir()
        if carried or (gone and self.root_given):
            return
        hint = (f"give {here} an index of its own (another --index-dir), or pass --rebuild "
                f"to make this index one of {here} (what it holds now goes)")  # fmt: skip
        if not gone:
            raise IndexMismatch(
                f"the index at {self.index_dir} holds {held}; indexing {here} into it would "
                f"remove every file of {held} from it",
                hint=f"index {held} (`memserver index {held} --index-dir {self.index_dir}`), "
                + hint,
            )
        where = f"holds {held}, which is gone" if held else "records no project folder"
        raise IndexMismatch(
            f"the index at {self.index_dir} {where}; {here} was not named as its project",
            hint=f"if the project moved, name it: `memserver index NEW-PLACE --index-dir "
            f"{self.index_dir}`; else " + hint,
        )

    def check_claim_now(self) -> None:
        """`check_claim` against the index's record, when there is an index."""
        meta = read_meta(self.index_dir)
        if meta is not None:
            self.check_claim(meta.root)

    def _claim(self, store: IndexStore) -> None:
        """`check_claim`, then this tree is the one the index holds (recorded)."""
        self.check_claim(store.meta.root)
        store.adopt_root(str(self.root))

    def indexer(
        self, store: IndexStore, *, progress: Progress | None = None,
        git: tuple[str, str] = ("", ""), embedder: Embedder | None = None,
    ) -> Indexer:  # fmt: skip
        """An indexer over `store`, embedding with `embedder` (default: the indexing one)."""
        from memserver.ingest.pipeline import Indexer
        from memserver.ingest.tagging import Tagger

        return Indexer(
            store, self.chunker(), self.embedder if embedder is None else embedder,
            batch_files=self.settings.index.batch_files,
            embed_batch=self.settings.index.embed_batch_chunks,
            progress=progress, git=git, chunker_id=self.chunker_id(),
            distiller=self.distiller(),
            keep_versions=timedelta(minutes=self.settings.watch.keep_versions_minutes),
            root=self.root, max_file_bytes=self.settings.index.max_file_bytes,
            tagger=Tagger(self.settings.chunking, workers=self.settings.index.graph_workers),
            memory_vectors=self.settings.index.memory_vectors,
            code_chars=self.settings.embedding.max_chars,
        )  # fmt: skip

    def recaller(self, *, rerank: bool = True, store: IndexStore | None = None) -> Recaller:
        from memserver.retrieve.recall import Recaller
        from memserver.store.snapshot import AnnSettings, RecallView

        store = store or self.open_store()
        s = self.settings.recall
        view = RecallView(store, with_memories=True, ann=AnnSettings(
            min_rows=s.ann_min_rows, nprobes=s.ann_nprobes, refine=s.ann_refine,
            memory_refine=s.ann_memory_refine, probe_factor=s.ann_probe_factor,
            memory_probe_factor=s.ann_memory_probe_factor, exact_mb=s.exact_dense_mb,
        ))  # fmt: skip
        reranker = self.reranker()[0] if rerank else None
        return Recaller(
            view.get, store.keyword, self.query_embedder, s, tokens=self.tokens,
            reranker=reranker, expander=self.expander(), root=self.root,
            graph=self.code_graph(store) if s.graph_weight or s.graph_near_weight else None,
            files=store.file_keyword, dense_chars=QUERY_CHARS,
            file_order=self.file_order(),
        )  # fmt: skip

    def memory_service(self, *, embedder: Embedder | None = None,
                       store: IndexStore | None = None, actor: str = "memserver",
                       ) -> MemoryService:  # fmt: skip
        """The remember/forget service over a writable store (created if missing)."""
        from memserver.memory.service import MemoryService

        return MemoryService(
            store or self.writable_store(rebuild=False),
            embedder if embedder is not None else self.query_embedder,
            self.tokens, self.settings.memory, lock_timeout=self.lock_timeout, actor=actor,
        )  # fmt: skip

    def consolidator(self) -> Consolidator:
        from memserver.memory.consolidate import Consolidator

        c = self.settings.consolidate
        return Consolidator(
            self.open_store(), affinity=c.affinity, neighbours=c.neighbours,
            half_life_days=c.half_life_days, lock_timeout=self.lock_timeout,
        )  # fmt: skip

    # -- the code graph (navigate/) ----------------------------------------------------

    def graph_view(self, store: IndexStore) -> GraphView:
        """The code graph of `store` in memory, one per store (navigation and recall share it)."""
        from memserver.navigate.view import GraphView

        views: dict[int, tuple[IndexStore, GraphView]] = self.__dict__.setdefault("_graphs", {})
        held = views.get(id(store))
        if held is None or held[0] is not store:
            held = views[id(store)] = (store, GraphView(store))
        return held[1]

    def code_graph(self, store: IndexStore) -> CodeGraph:
        """The code graph as recall's graph arms read it."""
        from memserver.navigate.arm import GraphArm

        return GraphArm(self.graph_view(store).get, store.graph.named)

    def navigator(self, store: IndexStore | None = None) -> Navigator:
        """outline, symbol, references and neighbours over the stored code graph."""
        from memserver.navigate.service import Navigator

        view = self.graph_view(store or self.open_store())
        return Navigator(view.get, self.tokens, root=self.root,
                         budget_tokens=self.settings.recall.budget_tokens)  # fmt: skip

    # ----------------------------------------------------------------------------------

    def browser(self, store: IndexStore | None = None) -> Browser:
        """Read-only views of the index for a person (the review page)."""
        from memserver.store.browse import Browser

        return Browser(store or self.open_store())

    def attributor(self, store: IndexStore | None = None,
                   embedder: Embedder | None = None) -> Attributor:  # fmt: skip
        """Scores answers against loaded evidence (the query model unless `embedder`)."""
        from memserver.retrieve.attribute import Attributor

        a = self.settings.attribution
        return Attributor(
            store or self.open_store(), embedder or self.query_embedder, a.weights, a.bias,
            a.threshold,
        )  # fmt: skip

    def expander(self) -> Expander | None:
        """An LLM query expander when the LLM is enabled and has a key, else None."""
        from memserver.llm.expand import LlmExpander

        llm = self.recall_llm
        return LlmExpander(llm).expand if llm is not None else None

    def file_order(self) -> FileOrder | None:
        """An LLM's order of a long query's first files ([recall] llm_files), else None."""
        from memserver.llm.locate import LlmFileRanker

        llm = self.recall_llm if self.settings.recall.llm_files > 1 else None
        return LlmFileRanker(llm) if llm is not None else None

    @cached_property
    def recall_llm(self) -> LLM | None:
        """The one model of the recall path (expansion and file order share its client),
        None when [llm] is disabled or has no key."""
        import os

        if not self.settings.llm.enabled:
            return None
        from memserver.llm import llm_from_settings

        return llm_from_settings(self.settings.llm, os.environ if self.env is None else self.env)

    def watch(self, on_report: Callable[[IndexReport], Any] | None = None
              ) -> tuple[Watcher, LiveIndex]:  # fmt: skip
        """A running watcher that keeps the index fresh (stop it with `.stop()`); refused
        before it starts when the index holds another project (`check_claim`)."""
        from memserver.ingest.live import start_watching

        self.check_claim_now()

        return start_watching(self, on_report)

    def export(self, out: str | Path) -> dict[str, Any]:
        """Write the index as a portable artifact (see memserver.store.artifact)."""
        from memserver.store.artifact import export_index

        name, dim = self.embedder_identity()
        result = export_index(self.index_dir, Path(out), embedder=name, dim=dim,
                              lock_timeout=self.lock_timeout)  # fmt: skip
        return result.to_dict()

    def import_artifact(self, archive: str | Path, *, force: bool = False) -> dict[str, Any]:
        """Restore an artifact as this checkout's index; notes say what `index` will redo."""
        from memserver.ingest.git import exclude_from_git, head
        from memserver.store.artifact import import_index

        name, dim = embedder_identity(self.configured_embedding)
        result = import_index(
            Path(archive), self.index_dir, root=self.root, embedder=name, dim=dim, force=force,
            lock_timeout=self.lock_timeout,
        )  # fmt: skip
        exclude_from_git(self.root, self.index_dir)
        built, commit = result.artifact, head(self.root)[0]
        notes = []
        if commit and built.git_commit and commit != built.git_commit:
            notes.append(f"HEAD is {commit[:12]}, the artifact was built at "
                         f"{built.git_commit[:12]}: `memserver index` redoes only the files "
                         "that differ")  # fmt: skip
        if built.chunker != self.chunker_id():
            notes.append(f"the artifact was chunked by {built.chunker}, this checkout uses "
                         f"{self.chunker_id()}: `memserver index` cuts every file again "
                         "(chunks that come out the same keep their vectors)")  # fmt: skip
        return {**result.to_dict(), "notes": notes}

    def doctor(self, *, repair: bool = False) -> DoctorReport:
        """Check the index (and with `repair` fix what can be fixed)."""
        from memserver.ingest.pipeline import keyword_only
        from memserver.memory.atomic import makes_statements
        from memserver.store.doctor import Doctor

        name, dim = self.embedder_identity()
        if not self.embedder_forced:  # the index's own, as it is now: an `index` begun since
            with contextlib.suppress(StoreError):  # this engine looked may have made it
                meta = read_meta(self.index_dir)
                if meta is not None:
                    name, dim = meta.embedder, meta.dim
        doctor = Doctor(
            self.index_dir, name, dim, lock_timeout=self.lock_timeout,
            configured=embedder_identity(self.configured_embedding),
            expects_memories=makes_statements,
            keyword_only=keyword_only(self.settings.index.memory_vectors),
        )  # fmt: skip
        report = doctor.run(repair=repair)
        report.checks.append(self.model_check())
        return report

    def model_check(self) -> Check:
        """Whether the embedding model is where this process looks for it, and the fix."""
        from memserver.embed.fastembed import FastEmbedder
        from memserver.embed.models import fix_hint
        from memserver.store.doctor import Check

        embedder = self.query_embedder
        if not isinstance(embedder, FastEmbedder):
            return Check("model", True, f"{self.settings.embedding.model}: nothing to load")
        if embedder.cached():
            return Check("model", True, f"{embedder.name} in {embedder.location()}")
        return Check("model", False, f"{embedder.name} is not in {embedder.cache}: recall is "
                     f"keyword-only; {fix_hint(embedder.name, embedder.cache)}")  # fmt: skip

    def fetch_model(self) -> tuple[str, str, int, str]:
        """Download the embedding model into its cache (if missing) and try it once:
        (model, cache folder, dimension, where it is in words)."""
        from memserver.embed.fastembed import FastEmbedder

        embedder = make_embedder(self.configured_embedding, download=True)
        if not isinstance(embedder, FastEmbedder):
            raise ModelUnavailable(
                f"{self.configured_embedding.model!r} is not a model to download",
                hint="set [embedding] model to a fastembed model name, or pass --model",
            )
        vector = embedder.embed_documents(["def hello(): return 'world'"])[0]
        return embedder.name, str(embedder.cache), len(vector), embedder.location()

    def status(self, store: IndexStore | None = None) -> Status:
        from indexers.read import Refused, read_bytes
        from memserver.ingest.git import head

        store = store or self.open_store()
        manifest = store.files.read()
        walked = self.walk()
        on_disk = {f.path: f for f in walked.files}
        stale = []
        for path, f in on_disk.items():
            rec = manifest.get(path)
            if rec is None or (rec.size, rec.mtime_ns) == (f.size, f.mtime_ns):
                continue
            found = read_bytes(str(self.root), f.abs_path, self.settings.index.max_file_bytes)
            if isinstance(found, Refused) or content_hash(found) != rec.content_hash:
                stale.append(path)
        commit, branch = head(self.root)
        meta = store.meta
        return Status(
            root=str(self.root), index_dir=str(self.index_dir), project=meta.project,
            files=len(manifest), chunks=store.indexed_chunks(),
            memories=store.memories.count_active(),
            notes=store.chunks.count_current(origin="note"),
            turns=store.chunks.count_current(origin="turn"),
            stale_memories=store.memories.count("stale"),
            forgotten_memories=store.memories.count("forgotten"),
            reranker=self.reranker()[1],
            unembedded_chunks=store.chunks.count_unembedded() if meta.dim else 0,
            embedder=meta.embedder, dim=meta.dim, tokenizer=meta.tokenizer,
            schema_version=meta.schema_version, created_at=meta.created_at,
            indexed_at=meta.indexed_at, interrupted=store.dirty,
            git=GitState(meta.git_commit, meta.git_branch, commit, branch),
            stale_files=tuple(sorted(stale)), new_files=tuple(sorted(set(on_disk) - set(manifest))),
            removed_files=tuple(sorted(set(manifest) - set(on_disk))),
            masked={p: dict(r.masked) for p, r in sorted(manifest.items()) if r.masked},
            rechunk=bool(meta.chunker) and meta.chunker != self.chunker_id(),
        )  # fmt: skip


__all__ = ["Engine", "resolve_root"]
