// Result 0 is written on device_a and exported on device_a; device_b only READS it
// (it copies it for its own matmul, whose output is result 1). Nothing moves back.
func.func @pipeline(
    %x: tensor<128x256xf32> {iree.abi.affinity = #hal.device.promise<@device_a>},
    %w: tensor<256x256xf32> {iree.abi.affinity = #hal.device.promise<@device_a>},
    %v: tensor<256x64xf32> {iree.abi.affinity = #hal.device.promise<@device_b>})
    -> (tensor<128x256xf32> {iree.abi.affinity = #hal.device.promise<@device_a>},
        tensor<128x64xf32> {iree.abi.affinity = #hal.device.promise<@device_b>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x256xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<128x256xf32>) -> tensor<128x256xf32>
  %h = linalg.matmul ins(%x, %w : tensor<128x256xf32>, tensor<256x256xf32>) outs(%f : tensor<128x256xf32>) -> tensor<128x256xf32>
  %hb = flow.tensor.transfer %h : tensor<128x256xf32> to #hal.device.promise<@device_b>
  %e2 = tensor.empty() : tensor<128x64xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<128x64xf32>) -> tensor<128x64xf32>
  %y = linalg.matmul ins(%hb, %v : tensor<128x256xf32>, tensor<256x64xf32>) outs(%f2 : tensor<128x64xf32>) -> tensor<128x64xf32>
  return %h, %y : tensor<128x256xf32>, tensor<128x64xf32>
}
