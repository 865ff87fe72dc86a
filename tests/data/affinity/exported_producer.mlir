// IREE's `exported_producer` (Stream AnnotateAffinities tests), with the
// gputop device names and without the fence: the value is filled on device_a
// and exported on device_b by a pin written on the export op, not by
// iree.abi.affinity. Declared b, produced a: a hidden transfer.
util.func public @exported_producer() -> !hal.buffer_view {
  %cst = flow.tensor.constant dense<123> : tensor<1xi32>
  %cst_a = flow.tensor.transfer %cst : tensor<1xi32> to #hal.device.promise<@device_a>
  %clone_a = flow.tensor.clone %cst_a : tensor<1xi32>
  %buffer_view = hal.tensor.export on(#hal.device.promise<@device_b>) %clone_a "output" : tensor<1xi32> -> !hal.buffer_view
  util.return %buffer_view : !hal.buffer_view
}
