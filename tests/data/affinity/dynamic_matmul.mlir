// IREE's multi-device data-tiling demo, dynamic shapes: the matmul runs on
// device_b, its operands arrive from device_a and its result goes back there.
// Every transfer's size is known only at run time (tensor<?x?xf32>).
func.func @dynamic_matmul(
    %lhs: tensor<?x?xf32> {iree.abi.affinity = #hal.device.promise<@device_a>},
    %rhs: tensor<?x?xf32> {iree.abi.affinity = #hal.device.promise<@device_a>})
    -> (tensor<?x?xf32> {iree.abi.affinity = #hal.device.promise<@device_a>}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %lhs, %c0 : tensor<?x?xf32>
  %k = tensor.dim %lhs, %c1 : tensor<?x?xf32>
  %n = tensor.dim %rhs, %c1 : tensor<?x?xf32>
  %lhs_b = flow.tensor.transfer %lhs : tensor<?x?xf32>{%m, %k} to #hal.device.promise<@device_b>
  %rhs_b = flow.tensor.transfer %rhs : tensor<?x?xf32>{%k, %n} to #hal.device.promise<@device_b>
  %e = tensor.empty(%m, %n) : tensor<?x?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %r = linalg.matmul ins(%lhs_b, %rhs_b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%f : tensor<?x?xf32>) -> tensor<?x?xf32>
  %r_a = flow.tensor.transfer %r : tensor<?x?xf32>{%m, %n} to #hal.device.promise<@device_a>
  return %r_a : tensor<?x?xf32>
}
