// Fan-in: two producers, one on each device, combined on device_a.
func.func @fan_in(
    %x: tensor<64x64xf32> {iree.abi.affinity = #hal.device.promise<@device_a>},
    %z: tensor<64x64xf32> {iree.abi.affinity = #hal.device.promise<@device_b>})
    -> (tensor<64x64xf32> {iree.abi.affinity = #hal.device.promise<@device_a>}) {
  %p = arith.mulf %x, %x : tensor<64x64xf32>
  %q = arith.addf %z, %z : tensor<64x64xf32>
  %qa = flow.tensor.transfer %q : tensor<64x64xf32> to #hal.device.promise<@device_a>
  %r = arith.subf %p, %qa : tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}
