"""Compile `.mlir` to `.vmfb` in a child process, cached by content.

The compiler runs as a separate process (the real `iree-compile`) so that a
compiler crash, which does happen for some targets, becomes a `CompileError`
with a readable line instead of killing gputop. Results are cached under the
user's cache directory keyed by the source bytes, the flags and the compiler
version, so a second run of the same module costs no compile at all. The full
compiler output is kept in a log file; the user sees one line per error.
Beside each cached module the compiler's dump of its executable sources is
kept (`KEY.sources/`): the dispatches' own IR, from which `profiling/work/ir_count.py` counts
their FLOPs and bytes.

A cached module is trusted only as far as its digest: `KEY.sha256` (in
`sha256sum` format) is written with it and checked on every hit, and a module
that does not match it (flipped bytes, a truncated copy, no digest) is said in
one line and compiled again, never loaded. A compile writes into
`*.PID.*.partial` names and renames them when done; those left by a process
that is gone (killed mid-compile) are removed before the next compile. A
compiler that uses no CPU for a while (stopped) is said once per period.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import re
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from gputop.core.errors import CompileError, GputopError, UsageError
from gputop.core.files import file_sha256, require_file
from gputop.core.module.diagnostics import TRAILING_LOC, looks_like_crash, parse_diagnostics
from gputop.core.module.targets import KnownBadTarget, known_bad_target
from gputop.core.paths import cache_dir
from gputop.core.processes import pid_alive, run_logged
from gputop.core.records.compile import Diagnostic

__all__ = [
    "DEBUGINFO_FLAG",
    "DIGEST_SUFFIX",
    "LOCATED_MARK",
    "MAX_SOURCE_BYTES",
    "SITES_SUFFIX",
    "SOURCES_DUMP_FLAG",
    "WORKAROUNDS",
    "CompiledModule",
    "Workaround",
    "cache_key_for",
    "compile_failure",
    "compile_module",
    "compiler_version",
    "dump_dispatch_sites",
    "find_compiler",
    "read_source",
    "remove_stale_partials",
]

MAX_SOURCE_BYTES = 2 * 1024**3


@dataclass(frozen=True)
class CompiledModule:
    """A `.vmfb` ready to load, and how it came to be."""

    vmfb_path: Path
    flags: tuple[str, ...]
    cache_key: str | None
    cache_hit: bool
    compile_s: float
    diagnostics: tuple[Diagnostic, ...] = ()
    log_path: Path | None = None
    workaround: str | None = None  # a compiler bug met and worked around (see WORKAROUNDS), said in one line
    timestamp: float = field(default_factory=time.time)


@dataclass(frozen=True)
class Workaround:
    """A failure of the compiler we ship that one more flag avoids, for one target backend."""

    backend_flag: str  # the target flag that selects the backend
    symptom: str  # what the compiler says
    flag: str  # what avoids it
    why: str


WORKAROUNDS = (
    # IREE 3.13, CUDA: 1x1 convolutions of ResNet-50 (as reductions) fail in the reduction
    # vector-distribution pipeline; the default pipeline compiles them and the output checks.
    Workaround(
        "--iree-hal-target-device=cuda",
        "failed to distribute",
        "--iree-codegen-llvmgpu-use-reduction-vector-distribution=false",
        "IREE 3.13's CUDA reduction pipeline failed to distribute a dispatch",
    ),
)


def compile_module(
    source_path: Path,
    flags: tuple[str, ...],
    *,
    log_dir: Path | None = None,
    cancel: threading.Event | None = None,
    use_cache: bool = True,
    source_bytes: bytes | None = None,
    notify: Callable[[str], None] | None = None,
) -> CompiledModule:
    """Compile `source_path` with `flags`, retrying once with a known workaround when one applies.

    A workaround that was needed is remembered beside the cache (for this source, these flags
    and this compiler), so later runs go straight to the working flags instead of meeting the
    compiler's failure again (seconds on a large model). `notify` gets the lines worth a
    warning on the way: a corrupt cached module rebuilt, a compiler that makes no progress.
    """
    data = source_bytes if source_bytes is not None else read_source(source_path)

    def attempt(with_flags: tuple[str, ...], key: str | None = None) -> CompiledModule:
        return _compile_once(
            source_path, data, with_flags, key or cache_key_for(data, with_flags), log_dir=log_dir, cancel=cancel,
            use_cache=use_cache, write_source=source_bytes is not None, notify=notify,
        )  # fmt: skip

    key = cache_key_for(data, flags)  # hashed once: an imported model's source can be large
    remembered = _in_cache(key, ".workaround")
    if use_cache:
        fix = _remembered_workaround(remembered)
        if fix is not None:
            compiled = attempt((*flags, fix.flag))
            return replace(compiled, workaround=f"{fix.why}; compiled with {fix.flag} (remembered)")
    try:
        return attempt(flags, key)
    except CompileError as exc:
        fix = next(
            (w for w in WORKAROUNDS if w.backend_flag in flags and w.symptom in exc.output and w.flag not in flags),
            None,
        )
        if fix is None:
            raise
        compiled = attempt((*flags, fix.flag))
        with contextlib.suppress(OSError):  # only a shortcut for later runs
            remembered.write_text(fix.flag + "\n", encoding="utf-8")
        return replace(compiled, workaround=f"{fix.why}; compiled again with {fix.flag}")


def _in_cache(key: str, suffix: str) -> Path:
    """Where the compile cache keeps one thing (the module, its log, a needed workaround) for `key`."""
    return cache_dir() / "vmfb" / f"{key}{suffix}"


def _remembered_workaround(marker: Path) -> Workaround | None:
    """The workaround an earlier compile of the same source and flags needed, if it is still one we know."""
    try:
        flag = marker.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return next((w for w in WORKAROUNDS if w.flag == flag), None)


def compiler_version() -> str:
    """The installed iree-base-compiler version (part of every cache key)."""
    try:
        return importlib.metadata.version("iree-base-compiler")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def find_compiler() -> str:
    """Absolute path of the `iree-compile` binary shipped with iree-base-compiler."""
    try:
        from iree.compiler.tools.binaries import find_tool

        return find_tool("iree-compile")
    except Exception:  # missing package or tool: fall back to PATH
        found = shutil.which("iree-compile")
        if found:
            return found
        raise CompileError("iree-compile not found: install iree-base-compiler (make run does)") from None


def read_source(path: Path) -> bytes:
    """The bytes of a source file, or a UsageError naming what is wrong with it."""
    size = require_file(path)
    try:
        if size > MAX_SOURCE_BYTES:
            raise UsageError(f"{path}: {size} bytes is too large for a source module (limit 2 GiB)")
        data = path.read_bytes()
    except PermissionError:
        raise UsageError(f"{path}: permission denied") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read ({exc.strerror})") from None
    if not data.strip():
        raise UsageError(f"{path}: file is empty")
    return data


def cache_key_for(source: bytes, flags: tuple[str, ...]) -> str:
    digest = hashlib.sha256()
    digest.update(source)
    digest.update(b"\0".join(f.encode() for f in flags))
    digest.update(compiler_version().encode())
    return digest.hexdigest()[:32]


def _compile_once(
    source_path: Path,
    data: bytes,
    flags: tuple[str, ...],
    key: str,
    *,
    log_dir: Path | None = None,
    cancel: threading.Event | None = None,
    use_cache: bool = True,
    write_source: bool = False,
    notify: Callable[[str], None] | None = None,
) -> CompiledModule:
    """Compile `data` (read from `source_path`) with `flags`, whose cache key is `key`.

    Returns the cached `.vmfb` when there is one and it matches its digest.
    """
    if data.startswith(b"\x7fELF") or (b"\0" in data[:4096] and not data.startswith(b"ML\xefR")):
        raise UsageError(f"{source_path}: looks like a binary file, not MLIR text or bytecode")
    cached = _in_cache(key, ".vmfb")
    log_root = log_dir or cache_dir() / "logs"
    log_root.mkdir(parents=True, exist_ok=True)
    log_path = log_root / f"compile-{key[:12]}.log"
    remove_stale_partials(cached.parent)
    if use_cache and cached.exists() and not _intact(cached, notify):
        cached.unlink(missing_ok=True)  # never loaded again; the compile below puts a good one in its place
    if use_cache and cached.exists() and cached.stat().st_size > 0:
        return _from_cache(cached, source_path, data, flags, key, log_root, log_path, cancel, write_source, notify)

    bad = known_bad_target(flags)
    cached.parent.mkdir(parents=True, exist_ok=True)
    unfinished = cached.with_suffix(f".{os.getpid()}.{threading.get_ident()}.partial")
    source_for_compiler = _source_file(source_path, data, log_root, key, write_source)
    sources = cached.with_suffix(".sources")
    dump = _sources_flags(flags, unfinished.with_suffix(".sources.partial"))
    command = [find_compiler(), str(source_for_compiler), *flags, *dump, "-o", str(unfinished)]
    started = time.perf_counter()
    # The dispatch sites (a few seconds at most, the compile's first half) beside the compile, on another core.
    sites = threading.Thread(
        target=dump_dispatch_sites,
        args=(source_for_compiler, flags, cached.with_suffix(SITES_SUFFIX), log_root, key, cancel),
        name="gputop-dispatch-sites",
        daemon=True,
    )
    sites.start()
    text, returncode = run_logged(command, log_path, cancel, what="compile", on_stall=_stall_notice(notify))
    elapsed = time.perf_counter() - started
    sites.join()
    diagnostics = tuple(parse_diagnostics(text, log_path=str(log_path)))
    if returncode != 0 or not unfinished.exists():
        unfinished.unlink(missing_ok=True)
        kept = _keep_failed_sources(unfinished.with_suffix(".sources.partial"), log_root / f"sources-{key[:12]}")
        raise compile_failure(text, returncode, diagnostics, log_path, bad, data, source_for_compiler.name, kept)
    if dump:
        _keep_sources(unfinished.with_suffix(".sources.partial"), sources)
    with contextlib.suppress(OSError):  # the log is a convenience of later cache hits
        log_partial = cached.with_suffix(f".log.{os.getpid()}.{threading.get_ident()}.partial")
        shutil.copyfile(log_path, log_partial)
        os.replace(log_partial, cached.with_suffix(".log"))
    _write_digest(unfinished, cached)
    os.replace(unfinished, cached)
    return CompiledModule(cached, flags, key, False, elapsed, diagnostics, log_path)


def _from_cache(
    cached: Path,
    source_path: Path,
    data: bytes,
    flags: tuple[str, ...],
    key: str,
    log_root: Path,
    log_path: Path,
    cancel: threading.Event | None,
    write_source: bool,
    notify: Callable[[str], None] | None,
) -> CompiledModule:
    """The cached `.vmfb` (its executable sources dumped again where they are missing or without locations),
    with a copy of its first compile's log and that log's diagnostics."""
    if not (cached.with_suffix(".sources") / LOCATED_MARK).exists() or not cached.with_suffix(SITES_SUFFIX).exists():
        # Cached before gputop kept the executable sources, or kept them without their ops' locations
        # (which name each kernel's source ops): dump them alone (no codegen, about a second).
        shutil.rmtree(cached.with_suffix(".sources"), ignore_errors=True)
        cached.with_suffix(".work.json").unlink(missing_ok=True)
        source_for_compiler = _source_file(source_path, data, log_root, key, write_source)
        _dump_sources_only(source_for_compiler, flags, cached.with_suffix(".sources"), log_root, key, cancel, notify)
        dump_dispatch_sites(source_for_compiler, flags, cached.with_suffix(SITES_SUFFIX), log_root, key, cancel)
    # The first compile's log travels with the module: this session gets its copy and warnings.
    cached_log = cached.with_suffix(".log")
    if not cached_log.exists():
        return CompiledModule(cached, flags, key, True, 0.0, (), None)
    shutil.copyfile(cached_log, log_path)
    text = log_path.read_text(encoding="utf-8", errors="replace")
    return CompiledModule(
        cached, flags, key, True, 0.0, tuple(parse_diagnostics(text, log_path=str(log_path))), log_path
    )


SOURCES_DUMP_FLAG = "--iree-hal-dump-executable-sources-to"
# Printed with each op's location, the dumped sources say which ONNX node or source line every op of a
# kernel came from (`profiling/work/source_ops.py`). The flag changes only what is printed, not the module.
DEBUGINFO_FLAG = "--mlir-print-debuginfo"
# Written into a kept sources folder dumped with DEBUGINFO_FLAG (older caches lack it and are dumped again).
LOCATED_MARK = ".located"
# The module's dispatch sites (`flow.dispatch @exe::@export ... loc(...)`, one line each), kept beside it: IREE
# gives identical executables one name, so one kernel may run for several layers (q, k and v projections of
# one shape; a ResNet's repeated blocks), and only its sites name them all. Printed inline, constants elided.
SITES_SUFFIX = ".sites.mlir"
SITES_FLAGS = (
    "--compile-to=flow",
    DEBUGINFO_FLAG,
    "--mlir-print-local-scope",
    "--mlir-elide-elementsattrs-if-larger=16",
    "--mlir-elide-resource-strings-if-larger=16",
)
DIGEST_SUFFIX = ".sha256"


def _write_digest(module: Path, cached: Path) -> None:
    """`KEY.sha256` for the module about to become `cached`, in `sha256sum -c` format, written atomically."""
    target = cached.with_suffix(DIGEST_SUFFIX)
    partial = cached.with_suffix(f"{DIGEST_SUFFIX}.{os.getpid()}.{threading.get_ident()}.partial")
    partial.write_text(f"{file_sha256(module)}  {cached.name}\n", encoding="utf-8")
    os.replace(partial, target)


def _intact(cached: Path, notify: Callable[[str], None] | None) -> bool:
    """Whether a cached module matches the digest written with it; when not, say so (it is compiled again)."""
    try:
        recorded = cached.with_suffix(DIGEST_SUFFIX).read_text(encoding="utf-8").split()[0]
    except (OSError, IndexError, UnicodeDecodeError):
        why = "it has no digest"
    else:
        try:
            why = "" if file_sha256(cached) == recorded else "its sha256 does not match the one written with it"
        except OSError as exc:
            why = f"it cannot be read ({exc.strerror})"
    if not why:
        return True
    if notify is not None:
        notify(f"the cached module {cached} is corrupt ({why}): compiling it again")
    return False


def _stall_notice(notify: Callable[[str], None] | None) -> Callable[[float], None] | None:
    """What the compile says when the compiler has used no CPU for a while (stopped with SIGSTOP, say)."""
    if notify is None:
        return None
    say = notify
    return lambda idle: say(f"the compiler has made no progress for {idle:.0f} s (stopped? Ctrl-C stops the run)")


_PARTIAL = re.compile(r"^[0-9a-f]+(?:\.[a-z][a-z0-9]*)*\.(\d+)\.\d+(?:\.sources)?\.partial$")


def remove_stale_partials(folder: Path) -> list[Path]:
    """Remove the `*.PID.*.partial` files and folders of compiles whose process is gone; return them.

    A compile killed outright (SIGKILL, a power cut) cannot clean up after itself; its pid,
    written into every name it uses, tells the next compile that nobody owns them any more.
    """
    removed: list[Path] = []
    try:
        names = [p for p in folder.iterdir() if p.name.endswith(".partial")]
    except OSError:
        return removed
    for path in names:
        match = _PARTIAL.match(path.name)
        if match is None or pid_alive(int(match.group(1))):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                path.unlink()
        if not path.exists():
            removed.append(path)
    return removed


def _source_file(source_path: Path, data: bytes, log_root: Path, key: str, write_source: bool) -> Path:
    """The file the compiler reads: the source itself, or (built-in demos have none) a copy of its bytes."""
    if not write_source:
        return source_path
    path = log_root / f"source-{key[:12]}.mlir"
    path.write_bytes(data)
    return path


def _sources_flags(flags: tuple[str, ...], folder: Path) -> tuple[str, ...]:
    """The flag that dumps the executable sources into `folder`, unless the user's flags dump them already."""
    if any(f.startswith((SOURCES_DUMP_FLAG, "--iree-hal-dump-executable-files-to")) for f in flags):
        return ()  # the option may be given once only
    located = () if DEBUGINFO_FLAG in flags else (DEBUGINFO_FLAG,)
    return (f"{SOURCES_DUMP_FLAG}={folder}", *located)


def _keep_sources(dumped: Path, sources: Path) -> None:
    """Move a finished dump beside the cached module (another process may have put one there first)."""
    if not dumped.is_dir():
        return
    with contextlib.suppress(OSError):
        (dumped / LOCATED_MARK).touch()
    try:
        os.replace(dumped, sources)
    except OSError:  # already there from a concurrent compile of the same key: theirs is as good
        shutil.rmtree(dumped, ignore_errors=True)


def _keep_failed_sources(dumped: Path, kept: Path) -> Path | None:
    """A failed compile's dumped executable sources, moved beside its log: an error located in one of
    them (`module_f_dispatch_0.mlir:16:8`) names a file the user can open. None when there are none."""
    if not dumped.is_dir() or not any(dumped.iterdir()):
        shutil.rmtree(dumped, ignore_errors=True)
        return None
    shutil.rmtree(kept, ignore_errors=True)
    try:
        os.replace(dumped, kept)
    except OSError:
        shutil.rmtree(dumped, ignore_errors=True)
        return None
    return kept


def _dump_sources_only(
    source: Path,
    flags: tuple[str, ...],
    sources: Path,
    log_root: Path,
    key: str,
    cancel: threading.Event | None,
    notify: Callable[[str], None] | None = None,
) -> None:
    """Dump the executable sources of a cached module without compiling it again; failing is only a loss of FLOPs."""
    partial = sources.with_suffix(f".sources.{os.getpid()}.{threading.get_ident()}.partial")
    dump = _sources_flags(flags, partial)
    if not dump:
        return
    command = [find_compiler(), str(source), *flags, *dump, "--compile-to=executable-sources", "-o", os.devnull]
    _, returncode = run_logged(
        command, log_root / f"sources-{key[:12]}.log", cancel, what="the source dump", on_stall=_stall_notice(notify)
    )
    if returncode == 0:
        _keep_sources(partial, sources)
    else:  # an empty folder: the next cache hit does not try again, and the work says it has no sources
        shutil.rmtree(partial, ignore_errors=True)
        sources.mkdir(exist_ok=True)
        with contextlib.suppress(OSError):
            (sources / LOCATED_MARK).touch()


def dump_dispatch_sites(
    source: Path, flags: tuple[str, ...], out: Path, log_root: Path, key: str, cancel: threading.Event | None
) -> None:
    """Write the module's dispatch sites to `out`; where the compiler fails, an empty file (tried once: without
    it a kernel is named by its executable's own ops, which may be one of the several layers it runs for)."""
    printing = ("--mlir-print-debuginfo", "--mlir-print-local-scope", "--mlir-elide", "--compile-to", "-o")
    kept = tuple(flag for flag in flags if not flag.startswith(printing) and not flag.startswith("--iree-hal-dump"))
    partial = out.with_name(f"{out.name}.{os.getpid()}.{threading.get_ident()}.partial")  # renamed when whole
    command = [find_compiler(), str(source), *kept, *SITES_FLAGS, "-o", str(partial)]
    try:
        _, returncode = run_logged(command, log_root / f"sites-{key[:12]}.log", cancel, what="the dispatch sites")
    except GputopError:  # cancelled, or no room for its log: the compile itself says so
        partial.unlink(missing_ok=True)
        return
    with contextlib.suppress(OSError):
        if returncode != 0 or not partial.exists():
            partial.unlink(missing_ok=True)
            partial.write_text("", encoding="utf-8")
        _keep_dispatch_lines(partial)
        os.replace(partial, out)


def _keep_dispatch_lines(path: Path) -> None:
    """Only the dispatch sites of the flow IR (a large model's is megabytes; its sites a few kilobytes)."""
    with path.open(encoding="utf-8", errors="replace") as file:
        lines = [line.strip() for line in file if "flow.dispatch @" in line]
    path.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")


def compile_failure(
    text: str,
    returncode: int,
    diagnostics: tuple[Diagnostic, ...],
    log_path: Path,
    bad: KnownBadTarget | None,
    source: bytes = b"",
    source_name: str = "",
    kept_sources: Path | None = None,
) -> CompileError:
    hint = ""
    if bad is not None:
        hint = f" ({bad.flag}: {bad.what_happens}; use {bad.instead})"
    if looks_like_crash(text, returncode):
        signal_note = f"signal {-returncode}" if returncode < 0 else f"exit {returncode}"
        errors = [d for d in diagnostics if d.severity == "error"]
        after = f" after: {errors[0].message}" if errors else ""
        error = CompileError(f"the compiler crashed ({signal_note}){after}{hint}", log_path=str(log_path))
    else:
        errors = [d for d in diagnostics if d.severity == "error"]
        if errors:
            first = errors[0].one_line().removeprefix("error: ")
            location = errors[0].location
            quoted, where = _located(location, source, source_name, kept_sources)
            if where is not None and location:
                first = first.replace(location.rsplit(":", 2)[0], str(where), 1)
            error = CompileError(first + quoted + hint, log_path=str(log_path))
            error.located_at = _position(location, where)
        else:
            error = CompileError(f"the compiler failed (exit {returncode}){hint}", log_path=str(log_path))
    error.diagnostics = diagnostics
    error.output = text
    return error


def _located(
    location: str | None, source: bytes, source_name: str, kept_sources: Path | None
) -> tuple[str, Path | None]:
    """The quoted line of an error's location and, when it is in a dumped executable source, the kept
    file it is in: a location in the module quotes the module; one in `module_f_dispatch_0.mlir`
    quotes that file (kept beside the log), never the module's line of the same number."""
    match = re.match(r"(?P<file>.*):\d+:\d+$", location or "")
    if match is None:
        return "", None
    name = Path(match.group("file")).name
    if not source_name or name == source_name:
        return _quoted_line(location, source), None
    if kept_sources is not None and (kept_sources / name).is_file():
        kept = kept_sources / name
        return _quoted_line(location, kept.read_bytes()), kept
    return "", None


def _position(location: str | None, kept: Path | None) -> tuple[str, int, int] | None:
    """(file, line, column) of `location`, the file being the kept dispatch source where it is in one."""
    match = re.match(r"(?P<file>.*):(?P<line>\d+):(?P<col>\d+)$", location or "")
    if match is None:
        return None
    return str(kept) if kept is not None else match.group("file"), int(match.group("line")), int(match.group("col"))


def _quoted_line(location: str | None, source: bytes, width: int = 80) -> str:
    """`: `the source line`` for a `file:line:col` location in the module's own text, else ""."""
    match = re.search(r":(\d+):\d+$", location or "")
    if match is None or source.startswith(b"ML\xefR"):
        return ""
    lines = source.split(b"\n")
    number = int(match.group(1))
    if not 1 <= number <= len(lines):
        return ""
    # Sources compiled with --mlir-print-debuginfo (ONNX models) end each op with its location: noise here.
    text = TRAILING_LOC.sub("", lines[number - 1].decode("utf-8", errors="replace")).strip()
    if not text:
        return ""
    return f": `{text[: width - 3] + '...' if len(text) > width else text}`"
