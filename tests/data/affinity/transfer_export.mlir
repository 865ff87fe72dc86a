// A value computed on device_a, transferred to device_b and exported from the copy.
func.func @transfer_export(
    %x: tensor<128x32xf32> {iree.abi.affinity = #hal.device.promise<@device_a>})
    -> (tensor<128x32xf32> {iree.abi.affinity = #hal.device.promise<@device_b>}) {
  %h = arith.addf %x, %x : tensor<128x32xf32>
  %hb = flow.tensor.transfer %h : tensor<128x32xf32> to #hal.device.promise<@device_b>
  return %hb : tensor<128x32xf32>
}
