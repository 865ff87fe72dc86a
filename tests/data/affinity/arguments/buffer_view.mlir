// A raw-ABI function (util.func public, as IREE's HAL tests write them): its
// argument is a !hal.buffer_view, imported on device_a by a pin on the import
// op; iree-run-module --input=4xi32=1,2,3,4 prints 3 5 7 9 (2x + 1).
util.func public @buffer_view(%view: !hal.buffer_view) -> !hal.buffer_view {
  %x = hal.tensor.import on(#hal.device.promise<@device_a>) %view "input" : !hal.buffer_view -> tensor<4xi32>
  %two = arith.constant dense<2> : tensor<4xi32>
  %one = arith.constant dense<1> : tensor<4xi32>
  %doubled = arith.muli %x, %two : tensor<4xi32>
  %y = arith.addi %doubled, %one : tensor<4xi32>
  %out = hal.tensor.export on(#hal.device.promise<@device_a>) %y "output" : tensor<4xi32> -> !hal.buffer_view
  util.return %out : !hal.buffer_view
}
