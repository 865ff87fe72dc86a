// Arguments returned unchanged: x as result 0 (declared on device_a, like x) and as
// result 2 (declared on device_b); result 1 is computed on device_b.
func.func @passthrough(
    %x: tensor<16x16xf32> {iree.abi.affinity = #hal.device.promise<@device_a>},
    %y: tensor<32x16xf32> {iree.abi.affinity = #hal.device.promise<@device_b>})
    -> (tensor<16x16xf32> {iree.abi.affinity = #hal.device.promise<@device_a>},
        tensor<32x16xf32> {iree.abi.affinity = #hal.device.promise<@device_b>},
        tensor<16x16xf32> {iree.abi.affinity = #hal.device.promise<@device_b>}) {
  %z = arith.addf %y, %y : tensor<32x16xf32>
  return %x, %z, %x : tensor<16x16xf32>, tensor<32x16xf32>, tensor<16x16xf32>
}
