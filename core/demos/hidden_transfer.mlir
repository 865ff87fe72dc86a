// The result is declared on device_a but computed on device_b: exporting it on
// device_a costs a transfer nobody asked for. gputop flags that result.
func.func @hidden_transfer(
    %x: tensor<256x512xf32> {iree.abi.affinity = #hal.device.promise<@device_a>},
    %w: tensor<512x256xf32> {iree.abi.affinity = #hal.device.promise<@device_b>})
    -> (tensor<256x256xf32> {iree.abi.affinity = #hal.device.promise<@device_a>}) {
  %zero = arith.constant 0.0 : f32
  %xb = flow.tensor.transfer %x : tensor<256x512xf32> to #hal.device.promise<@device_b>
  %e = tensor.empty() : tensor<256x256xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<256x256xf32>) -> tensor<256x256xf32>
  %y = linalg.matmul ins(%xb, %w : tensor<256x512xf32>, tensor<512x256xf32>) outs(%f : tensor<256x256xf32>) -> tensor<256x256xf32>
  return %y : tensor<256x256xf32>
}
