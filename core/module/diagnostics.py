"""Compiler output turned into a few structured, one-line diagnostics.

iree-compile's errors come with whole IR dumps in their notes: thousands of
lines that bury the one sentence a person needs. This parser keeps the
heading of each error or warning (`file:line:col: error: message`), finds the
dispatch it is about in the notes, and recognises the diagnostics gputop
explains specially, such as a dispatch that needs more shared memory than the
device has. The full text always stays in a log file whose path is recorded.
"""

from __future__ import annotations

import re

from gputop.core.records.compile import Diagnostic

__all__ = ["TRAILING_LOC", "looks_like_crash", "parse_diagnostics"]

_HEADING = re.compile(r"^(?P<loc>\S[^\n]*?(?::\d+){0,2}): (?P<sev>error|warning|remark|note): (?P<msg>.*)$")
# Two spellings seen: "function 'f' uses N bytes ..." and "'func.func' op uses N bytes ...".
_SHARED_MEMORY = re.compile(
    r"(?:function '(?P<fn>[^']+)' )?(?:'func\.func' op )?uses (?P<used>\d+) bytes of shared memory; "
    r"exceeded the limit of (?P<limit>\d+) bytes"
)
_DISPATCH = re.compile(r"(?:sym_name = \"|@|function ')(?P<name>[A-Za-z_][\w$.]*_dispatch_\d+[\w$.]*)")
# An op printed with --mlir-print-debuginfo (ONNX models) ends with its location: the heading says it already.
TRAILING_LOC = re.compile(r"\s+loc\((?:[^()]|\([^()]*\))*\)\s*$")
_CRASH_MARKERS = ("Stack dump:", "PLEASE submit a bug report", "Segmentation fault")


def parse_diagnostics(text: str, *, log_path: str | None = None) -> list[Diagnostic]:
    """Errors, warnings and remarks in `text`, each with its notes folded in."""
    found: list[tuple[str, str, str, list[str]]] = []
    for raw in text.splitlines():
        heading = _HEADING.match(raw)
        if heading and heading.group("sev") != "note":
            message = TRAILING_LOC.sub("", heading.group("msg"))
            found.append((heading.group("sev"), heading.group("loc"), message, []))
        elif found:
            found[-1][3].append(raw)
    diagnostics: list[Diagnostic] = []
    seen: set[tuple[str, str, str]] = set()
    for severity, location, message, body in found:
        key = (severity, location, message)
        if key in seen:
            continue
        seen.add(key)
        diagnostics.append(_classify(severity, location, message, "\n".join(body), log_path))
    return diagnostics


def _classify(severity: str, location: str, message: str, body: str, log_path: str | None) -> Diagnostic:
    location_or_none = None if location.startswith("<unknown>") else location
    dispatch_match = _DISPATCH.search(message) or _DISPATCH.search(body)
    dispatch = dispatch_match.group("name") if dispatch_match else None
    shared = _SHARED_MEMORY.search(message)
    if shared:
        return Diagnostic(
            severity=severity,
            location=location_or_none,
            message=message.strip(),
            dispatch=shared.group("fn") or dispatch,
            kind="shared_memory_exceeded",
            used_bytes=int(shared.group("used")),
            limit_bytes=int(shared.group("limit")),
            log_path=log_path,
        )
    kind = "generic"
    if "missing GPU target" in message:
        kind = "unsupported_target"
    elif "while creating CPU target" in message:
        kind = "cpu_target"
    return Diagnostic(
        severity=severity,
        location=location_or_none,
        message=message.strip().rstrip(":"),
        dispatch=dispatch,
        kind=kind,
        log_path=log_path,
    )


def looks_like_crash(text: str, returncode: int) -> bool:
    """Whether the compiler died (signal or LLVM crash handler) rather than erred."""
    return returncode < 0 or returncode >= 128 or any(m in text for m in _CRASH_MARKERS)
