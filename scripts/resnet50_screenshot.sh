#!/usr/bin/env bash
# The ResNet-50 screenshot (docs/onnx.md): the onnx package's light ResNet-50 on the CPU with its
# dummy input, profiled once, from a short working folder so the header shows a short path.
set -eu
PY=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")  # absolute: the script works in a temporary folder
OUT=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
SCRIPTS=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
LIGHT=$("$PY" -c "import onnx, os; print(os.path.dirname(onnx.__file__))")/backend/test/data/light
cp "$LIGHT/light_resnet50.onnx" "$WORK/"
cd "$WORK"
"$PY" -c "import numpy as np; np.save('x224.npy', (np.arange(150528, dtype=np.float32) / 150528).reshape(1, 3, 224, 224))"
"$PY" "$SCRIPTS/screenshots.py" "$OUT" --target light_resnet50.onnx --device local-task --input @x224.npy \
  --calls 3 --profile --size 140x45
