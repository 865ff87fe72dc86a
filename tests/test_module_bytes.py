"""The module's own bytes: weights inlined in the `.vmfb` and read from parameter archives, counted and shown.

A new user's model had 33.5 MB of weights inlined in its module, and the Memory pane showed
`DEVICE_LOCAL 48.0 KiB`, its input: an allocator's statistics count what it allocates, and on local-task
the constants are read in place from the mapped `.vmfb`. These tests compile a real module with a 1 MiB
non-splat constant (a splat would be folded into a fill and take no bytes) and run it in the real app
and the real command on local-task, and on Vulkan (lavapipe), whose context creation uploads it.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
from textual.widgets import Static
from tui_pilot import calls, live_app, until_drawn, wait_for

from conftest import run_gputop, run_json
from gputop.core.module.contents import vmfb_contents
from gputop.core.wording import module_bytes_text
from gputop.tui.panes.table import KeyedTable

MiB = 1 << 20


def constant_module(folder: Path) -> Path:
    """`main(x: 4x512xf32) = x @ W` with W a 1 MiB random f32 constant written out as hex (`dense<"0x...">`)."""
    weights = np.random.default_rng(49).standard_normal((512, 512)).astype(np.float32)
    assert weights.nbytes == MiB
    source = folder / "inlined.mlir"
    source.write_text(
        "func.func @main(%x: tensor<4x512xf32>) -> tensor<4x512xf32> {\n"
        f'  %w = arith.constant dense<"0x{weights.tobytes().hex().upper()}"> : tensor<512x512xf32>\n'
        "  %zero = arith.constant 0.0 : f32\n"
        "  %init = tensor.empty() : tensor<4x512xf32>\n"
        "  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<4x512xf32>) -> tensor<4x512xf32>\n"
        "  %y = linalg.matmul ins(%x, %w : tensor<4x512xf32>, tensor<512x512xf32>)"
        " outs(%acc : tensor<4x512xf32>) -> tensor<4x512xf32>\n"
        "  return %y : tensor<4x512xf32>\n"
        "}\n"
    )
    return source


async def test_the_memory_pane_shows_the_weights_the_pools_do_not_count(tmp_path: Path) -> None:
    source = constant_module(tmp_path)
    app = live_app(target=str(source))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: calls(app) > 0, timeout=120)
        await until_drawn(pilot, app)
        table = app.query_one("#memory-table", KeyedTable)
        # The pane has rows from the memory sampler's first sample on, which on a loaded machine may come after
        # the first call (a fresh-clone run drew the pane without any row yet).
        await wait_for(pilot, lambda: "local-task/weights" in table.row_keys, timeout=30)
        assert table.row_cells("local-task/weights")["type"] == "weights"
        assert table.row_cells("local-task/weights")["live"] == "1.0 MiB"
        # The allocator sees the calls' buffers (4x512xf32, 8 KiB each), never the constant.
        assert table.row_cells("local-task/DEVICE_LOCAL")["type"] == "DEVICE_LOCAL"
        note = str(app.query_one("#memory-device", Static).render())
        assert "weights 1.0 MiB inlined in the .vmfb; not in the allocator's pools" in note, note
        await pilot.press("q")


def test_the_report_counts_the_inlined_constant_per_device(tmp_path: Path) -> None:
    source = constant_module(tmp_path)
    proc, report = run_json(str(source), "--device", "cpu", "-n", "2")
    assert proc.returncode == 0, proc.stderr
    memory = report["memory"]
    assert {"devices", "host_rss_bytes", "host_rss_peak_bytes", "host_total_bytes", "samples"} <= set(memory)
    [row] = memory["module_bytes"]
    assert row["device_id"] == "local-task" and row["devices"] == 1
    assert row["constant_bytes"] == MiB and row["weight_bytes"] == MiB and row["parameter_bytes"] == 0
    assert row["loaded_bytes"] == 0  # local-task reads the constant from the mapped file
    vmfb = Path(report["compile"]["vmfb"])
    assert row["vmfb_bytes"] == vmfb.stat().st_size
    # What the count rests on: the .vmfb is a ZIP archive whose constants are one .bin entry.
    entries = {info.filename: info.file_size for info in zipfile.ZipFile(vmfb).infolist()}
    assert entries["_const.bin"] == MiB and "module.fb" in entries
    assert row["executable_bytes"] == sum(n for name, n in entries.items() if name.endswith(".so"))
    [pools] = [device["pools"] for device in memory["devices"]]
    assert max(p["peak_bytes"] for p in pools) < MiB  # the pools never held it
    printout = run_gputop("run", str(source), "--device", "cpu", "-n", "1")
    assert printout.returncode == 0, printout.stderr
    assert "module    weights 1.0 MiB inlined in the .vmfb; not in the allocator's pools" in printout.stdout


def test_the_report_counts_parameters_mapped_in_place(tmp_path: Path) -> None:
    from gputop.core.params.archive import write_model

    specs = write_model(tmp_path / "model.irpa", tmp_path / "head.mlir", tensors=4, total_bytes=4 * MiB)
    proc, report = run_json(str(tmp_path / "head.mlir"), "--params", str(tmp_path / "model.irpa"), "--device", "cpu")
    assert proc.returncode == 0, proc.stderr
    [row] = report["memory"]["module_bytes"]
    assert row["parameter_bytes"] == sum(s.nbytes for s in specs)
    assert row["weight_bytes"] == row["constant_bytes"] + row["parameter_bytes"]
    assert row["loaded_bytes"] == 0  # mapped by mmap, zero copy: the allocator took nothing


def test_on_vulkan_the_pools_hold_the_uploaded_constant(tmp_path: Path, vulkan_device: str) -> None:
    source = constant_module(tmp_path)
    proc, report = run_json(str(source), "--device", vulkan_device, "-n", "2")
    assert proc.returncode == 0, proc.stderr
    [row] = report["memory"]["module_bytes"]
    assert row["constant_bytes"] == MiB
    assert row["loaded_bytes"] >= MiB  # context creation uploaded it (exactly 1 MiB on lavapipe)


def test_a_file_that_is_no_archive_is_said_not_counted(tmp_path: Path) -> None:
    broken = tmp_path / "broken.vmfb"
    broken.write_bytes(b"\0" * 4096)
    contents = vmfb_contents(broken)
    assert contents.vmfb_bytes == 4096 and contents.constant_bytes is None and contents.reason
    said = module_bytes_text({"device_id": "local-task", "vmfb_bytes": 4096, "constant_bytes": None,
                              "parameter_bytes": 0, "reason": contents.reason})  # fmt: skip
    assert said.startswith("weights not counted (broken.vmfb could not be read") and "4.0 KiB" in said


def test_the_sentence_for_each_way_an_allocator_counts_the_weights() -> None:
    """The figures seen with IREE 3.13 for a 16 MiB constant (CUDA on an H200: NVML's used memory grew 16.0 MiB
    while the allocator's allocated bytes stayed 0 and its peak grew 16 MiB), and on lavapipe and local-task."""

    def said(device: str, loaded: int, peak: int) -> str:
        row = {"device_id": device, "vmfb_bytes": 16 * MiB + 8960, "constant_bytes": 16 * MiB, "parameter_bytes": 0,
               "loaded_bytes": loaded, "loaded_peak_bytes": peak, "devices": 1}  # fmt: skip
        return module_bytes_text(row)

    assert said("cuda:0", 0, 16 * MiB).endswith(
        "in the pools' peak, not their live bytes (the peak grew 16.0 MiB as it loaded)"
    )
    assert said("vulkan:0", 16 * MiB, 16 * MiB).endswith(
        "; in the allocator's pools (it took 16.0 MiB as the module loaded)"
    )
    assert "; not in the allocator's pools (it took 0 B as the module loaded; a CPU device reads them in place" in said(
        "local-task", 0, 0
    )
