"""py-spy's folded stacks read as a watched program's own lines (core/program/stacks.py).

The text is py-spy 0.4.3's `--format raw --full-filenames` output as recorded from a real program
(tests/programs/why_slow.py on the H200, bench/results/h200-2026-11-28-why-slow-2), cut to five stacks:
a sample is charged to the deepest frame of the program's own files, iree.runtime's frames are IREE's wherever
it is installed (here a folder on PYTHONPATH), and the watcher's own thread is not the program's time.
"""

from __future__ import annotations

from gputop.core.program.stacks import fold_stacks, own_frame

APP = "/app/why_slow.py"
IREE = "/tmp/program-runtime/iree/runtime/function.py"
CALL = f"<module> ({APP}:74);main ({APP}:47);FunctionInvoker.__call__ ({IREE}"
THREAD = "_bootstrap (/usr/lib/python3.12/threading.py:1032);run (/usr/lib/python3.12/threading.py:1012)"
RAW = "\n".join(
    [
        f"{CALL}:119) 92",
        f"{CALL}:128);FunctionInvoker._invoke ({IREE}:148) 5",
        f"<module> ({APP}:74);main ({APP}:53) 3",
        f"{THREAD};_run (/x/inject/gputop_agent/stream.py:180) 100",
        f"<module> ({APP}:74);main ({APP}:40);mmap (/usr/lib/python3/dist-packages/numpy/core/numeric.py:10) 0",
    ]
)


def test_samples_go_to_the_programs_own_deepest_line() -> None:
    by_line, in_calls, total, calls = fold_stacks(RAW, ("/usr/lib/python3",))
    assert total == 100  # the watcher's thread (100 samples) is left out
    assert calls == 97
    assert by_line[("/app/why_slow.py", 47, "main")] == 97  # the line that called into IREE, not IREE's
    assert in_calls[("/app/why_slow.py", 47, "main")] == 97
    assert by_line[("/app/why_slow.py", 53, "main")] == 3 and not in_calls[("/app/why_slow.py", 53, "main")]


def test_own_files_are_neither_pythons_nor_installed_nor_irees() -> None:
    stdlib = ("/usr/lib/python3",)
    assert own_frame("/home/me/app.py", stdlib)
    assert not own_frame("/usr/lib/python3.12/threading.py", stdlib)
    assert not own_frame("/venv/lib/python3.12/site-packages/numpy/core/numeric.py", stdlib)
    assert not own_frame("/tmp/program-runtime/iree/runtime/function.py", stdlib)
    assert not own_frame("/x/inject/gputop_agent/wrappers.py", stdlib)
