// IREE's `exported_producer` test as it is written there: its devices are
// @dev_a and @dev_b, which `--devices` does not provide (it names device_a,
// device_b, ...). iree-compile prints "promised device that was not declared"
// errors and still exits 0: gputop must fail with one line.
util.func public @exported_producer() -> !hal.buffer_view {
  %cst = flow.tensor.constant dense<123> : tensor<1xi32>
  %cst_a = flow.tensor.transfer %cst : tensor<1xi32> to #hal.device.promise<@dev_a>
  %clone_a = flow.tensor.clone %cst_a : tensor<1xi32>
  %buffer_view = hal.tensor.export %clone_a "output" : tensor<1xi32> -> !hal.buffer_view
  util.return %buffer_view : !hal.buffer_view
}
