// Two stages across two devices: stage 1 on device_a, stage 2 on device_b; the
// intermediate moves from a to b by an explicit transfer.
func.func @pipeline(
    %x: tensor<64x128xf32> {iree.abi.affinity = #hal.device.promise<@device_a>},
    %w1: tensor<128x128xf32> {iree.abi.affinity = #hal.device.promise<@device_a>},
    %w2: tensor<128x32xf32> {iree.abi.affinity = #hal.device.promise<@device_b>})
    -> (tensor<64x32xf32> {iree.abi.affinity = #hal.device.promise<@device_b>}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<64x128xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64x128xf32>) -> tensor<64x128xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<64x128xf32>, tensor<128x128xf32>) outs(%f1 : tensor<64x128xf32>) -> tensor<64x128xf32>
  %hb = flow.tensor.transfer %h : tensor<64x128xf32> to #hal.device.promise<@device_b>
  %e2 = tensor.empty() : tensor<64x32xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %y = linalg.matmul ins(%hb, %w2 : tensor<64x128xf32>, tensor<128x32xf32>) outs(%f2 : tensor<64x32xf32>) -> tensor<64x32xf32>
  return %y : tensor<64x32xf32>
}
