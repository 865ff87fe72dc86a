// IREE's `aliased_storage` (Stream AnnotateAffinities tests) with gputop's
// device names: the result is written into caller-provided storage (a
// !hal.buffer) and signalled on a !hal.fence. gputop cannot make either:
// it refuses in one line naming the argument and its type.
util.func public @aliased_storage(%view: !hal.buffer_view, %storage: !hal.buffer, %fence: !hal.fence) {
  %arg_a = hal.tensor.import on(#hal.device.promise<@device_a>) %view : !hal.buffer_view -> tensor<4xi32>
  %two = arith.constant dense<2> : tensor<4xi32>
  %ret_b = arith.muli %arg_a, %two : tensor<4xi32>
  %alias_b = hal.tensor.alias on(#hal.device.promise<@device_b>) %ret_b : tensor<4xi32> to %storage : !hal.buffer
  hal.tensor.barrier join(%alias_b : tensor<4xi32>) => %fence : !hal.fence
  util.return
}
