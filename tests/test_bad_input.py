"""Bad input: each case exits with its code and one line, never a traceback or a hang."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import assert_one_line_error, run_gputop


def test_missing_file(tmp_path: Path) -> None:
    proc = run_gputop("run", str(tmp_path / "absent.mlir"), "--device", "cpu")
    assert_one_line_error(proc, 2, "absent.mlir: no such file")


def test_empty_mlir(tmp_path: Path) -> None:
    empty = tmp_path / "empty.mlir"
    empty.write_text("")
    proc = run_gputop("run", str(empty), "--device", "cpu")
    assert_one_line_error(proc, 2, "file is empty")


def test_empty_vmfb(tmp_path: Path) -> None:
    empty = tmp_path / "empty.vmfb"
    empty.write_bytes(b"")
    proc = run_gputop("run", str(empty), "--device", "cpu")
    assert_one_line_error(proc, 2, "file is empty")


def test_corrupt_vmfb(tmp_path: Path) -> None:
    bad = tmp_path / "junk.vmfb"
    bad.write_bytes(b"this is not a flatbuffer" * 10)
    proc = run_gputop("run", str(bad), "--device", "cpu")
    assert_one_line_error(proc, 5, "not a valid IREE module")


def test_binary_file_as_mlir(tmp_path: Path) -> None:
    binary = tmp_path / "model.mlir"
    binary.write_bytes(bytes(range(256)) * 4)
    proc = run_gputop("run", str(binary), "--device", "cpu")
    assert_one_line_error(proc, 2, "binary file")


def test_malformed_mlir(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32\n}\n")
    proc = run_gputop("run", str(bad), "--device", "cpu")
    line = assert_one_line_error(proc, 3, "bad.mlir:2:")
    assert "full log:" in line


def test_unknown_device() -> None:
    proc = run_gputop("run", "demo:mlp", "--device", "vulkan:9")
    assert_one_line_error(proc, 4, "vulkan:9")


def test_known_bad_target_crashing_the_compiler() -> None:
    proc = run_gputop(
        "run",
        "demo:mlp",
        "--device",
        "vulkan",
        "--target-flags",
        "--iree-hal-target-device=vulkan --iree-vulkan-target=sm_90",
        "--no-cache",
    )
    if proc.returncode == 4:
        pytest.skip("no Vulkan device")
    assert_one_line_error(proc, 3, "crashed", "ampere")


def test_unknown_demo() -> None:
    proc = run_gputop("run", "demo:nope")
    assert_one_line_error(proc, 2, "unknown demo")


def test_wrong_extension(tmp_path: Path) -> None:
    other = tmp_path / "model.txt"
    other.write_text("hello")
    proc = run_gputop("run", str(other), "--device", "cpu")
    assert_one_line_error(proc, 2, "expected a .mlir, .onnx or .vmfb")


@pytest.mark.parametrize(
    ("inputs", "fragment"),
    [
        (["256x1024xf32=1"], "takes 4 inputs, 1 given"),
        (["2x2xf32=1", "1024x1024xf32=1", "1024x512xf32=1", "512x256xf32=1"], "input 0 has shape 2x2"),
        (["256x1024xq9=1"], "bad --input"),
        (["256x1024xf32=1,2,3"], "3 values given"),
    ],
)
def test_wrong_inputs(inputs: list[str], fragment: str) -> None:
    args = [a for text in inputs for a in ("--input", text)]
    proc = run_gputop("run", "demo:mlp", "--device", "cpu", *args)
    assert_one_line_error(proc, 2, fragment)


def test_unknown_function() -> None:
    proc = run_gputop("run", "demo:mlp", "--device", "cpu", "--function", "nope")
    assert_one_line_error(proc, 2, "no function 'nope'", "mlp")


def test_usage_error_exit_code() -> None:
    proc = run_gputop("run", "--iterations", "many")
    assert proc.returncode == 2 and "invalid int value" in proc.stderr


def test_module_compiled_for_another_device(tmp_path: Path) -> None:
    from gputop.core.compile import compile_module
    from gputop.core.demos import DEMOS
    from gputop.core.targets import VULKAN_DEFAULT_FLAGS

    compiled = compile_module(Path("mlp.mlir"), VULKAN_DEFAULT_FLAGS, source_bytes=DEMOS["mlp"].source())
    proc = run_gputop("run", str(compiled.vmfb_path), "--device", "cpu")
    assert_one_line_error(proc, 5, "compiled for vulkan, not for local-task")
