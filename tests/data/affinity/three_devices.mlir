// Three devices in a chain: a -> b -> c, and device_a's intermediate is also returned.
func.func @three_devices(
    %x: tensor<64x64xf32> {iree.abi.affinity = #hal.device.promise<@device_a>})
    -> (tensor<64x64xf32> {iree.abi.affinity = #hal.device.promise<@device_c>},
        tensor<64x64xf32> {iree.abi.affinity = #hal.device.promise<@device_a>}) {
  %h1 = arith.mulf %x, %x : tensor<64x64xf32>
  %h1b = flow.tensor.transfer %h1 : tensor<64x64xf32> to #hal.device.promise<@device_b>
  %h2 = arith.addf %h1b, %h1b : tensor<64x64xf32>
  %h2c = flow.tensor.transfer %h2 : tensor<64x64xf32> to #hal.device.promise<@device_c>
  %h3 = arith.mulf %h2c, %h2c : tensor<64x64xf32>
  return %h3, %h1 : tensor<64x64xf32>, tensor<64x64xf32>
}
