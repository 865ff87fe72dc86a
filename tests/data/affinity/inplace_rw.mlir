// An in-place `rw` update on the other device: device_a computes x*x, it moves to
// device_b, and a dispatch there adds v into it in place (a readwrite binding).
func.func @inplace_rw(
    %x: tensor<32x256xf32> {iree.abi.affinity = #hal.device.promise<@device_a>},
    %v: tensor<32x256xf32> {iree.abi.affinity = #hal.device.promise<@device_b>})
    -> (tensor<32x256xf32> {iree.abi.affinity = #hal.device.promise<@device_b>}) {
  %h = arith.mulf %x, %x : tensor<32x256xf32>
  %hb = flow.tensor.transfer %h : tensor<32x256xf32> to #hal.device.promise<@device_b>
  %r = flow.dispatch.workgroups(%v, %hb) : (tensor<32x256xf32>, tensor<32x256xf32>) -> %hb =
      (%vin: !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x256xf32>>,
       %io: !iree_tensor_ext.dispatch.tensor<readwrite:tensor<32x256xf32>>) {
    %a = iree_tensor_ext.dispatch.tensor.load %vin, offsets = [0, 0], sizes = [32, 256], strides = [1, 1]
        : !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x256xf32>> -> tensor<32x256xf32>
    %b = iree_tensor_ext.dispatch.tensor.load %io, offsets = [0, 0], sizes = [32, 256], strides = [1, 1]
        : !iree_tensor_ext.dispatch.tensor<readwrite:tensor<32x256xf32>> -> tensor<32x256xf32>
    %s = arith.addf %a, %b : tensor<32x256xf32>
    iree_tensor_ext.dispatch.tensor.store %s, %io, offsets = [0, 0], sizes = [32, 256], strides = [1, 1]
        : tensor<32x256xf32> -> !iree_tensor_ext.dispatch.tensor<readwrite:tensor<32x256xf32>>
    flow.return
  }
  return %r : tensor<32x256xf32>
}
