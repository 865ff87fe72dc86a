// Fan-out: one producer (device_a's matmul), consumers on two devices: device_a
// squares it (result 0), device_b multiplies it by its own weight (result 1).
func.func @fan_out(
    %x: tensor<64x128xf32> {iree.abi.affinity = #hal.device.promise<@device_a>},
    %w: tensor<128x128xf32> {iree.abi.affinity = #hal.device.promise<@device_a>},
    %v: tensor<128x32xf32> {iree.abi.affinity = #hal.device.promise<@device_b>})
    -> (tensor<64x128xf32> {iree.abi.affinity = #hal.device.promise<@device_a>},
        tensor<64x32xf32> {iree.abi.affinity = #hal.device.promise<@device_b>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x128xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x128xf32>) -> tensor<64x128xf32>
  %h = linalg.matmul ins(%x, %w : tensor<64x128xf32>, tensor<128x128xf32>) outs(%f : tensor<64x128xf32>) -> tensor<64x128xf32>
  %ya = arith.mulf %h, %h : tensor<64x128xf32>
  %hb = flow.tensor.transfer %h : tensor<64x128xf32> to #hal.device.promise<@device_b>
  %e2 = tensor.empty() : tensor<64x32xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %yb = linalg.matmul ins(%hb, %v : tensor<64x128xf32>, tensor<128x32xf32>) outs(%f2 : tensor<64x32xf32>) -> tensor<64x32xf32>
  return %ya, %yb : tensor<64x128xf32>, tensor<64x32xf32>
}
