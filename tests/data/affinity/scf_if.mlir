// Control flow chooses the device: when pick_b is non-zero x is squared on device_b
// and brought back to device_a, else it is doubled on device_a.
func.func @scf_if(
    %pick_b: i32,
    %x: tensor<64x32xf32> {iree.abi.affinity = #hal.device.promise<@device_a>})
    -> (tensor<64x32xf32> {iree.abi.affinity = #hal.device.promise<@device_a>}) {
  %c0 = arith.constant 0 : i32
  %cond = arith.cmpi ne, %pick_b, %c0 : i32
  %r = scf.if %cond -> tensor<64x32xf32> {
    %xb = flow.tensor.transfer %x : tensor<64x32xf32> to #hal.device.promise<@device_b>
    %yb = arith.mulf %xb, %xb : tensor<64x32xf32>
    %ya = flow.tensor.transfer %yb : tensor<64x32xf32> to #hal.device.promise<@device_a>
    scf.yield %ya : tensor<64x32xf32>
  } else {
    %ya = arith.addf %x, %x : tensor<64x32xf32>
    scf.yield %ya : tensor<64x32xf32>
  }
  return %r : tensor<64x32xf32>
}
