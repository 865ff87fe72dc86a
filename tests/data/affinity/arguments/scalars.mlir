// Scalar arguments beside a tensor on device_a: i32, i64, f32 and i1, as
// iree-run-module takes them (--input=3 --input=4 --input=0.5 --input=true).
// y = p ? x * c + a + b : x (elementwise), and the i64 a + b.
func.func @scalars(
    %x: tensor<4xf32> {iree.abi.affinity = #hal.device.promise<@device_a>},
    %a: i32, %b: i64, %c: f32, %p: i1)
    -> (tensor<4xf32> {iree.abi.affinity = #hal.device.promise<@device_a>}, i64) {
  %af = arith.sitofp %a : i32 to f32
  %bf = arith.sitofp %b : i64 to f32
  %offset = arith.addf %af, %bf : f32
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %scaled = arith.mulf %in, %c : f32
    %moved = arith.addf %scaled, %offset : f32
    %picked = arith.select %p, %moved, %in : f32
    linalg.yield %picked : f32
  } -> tensor<4xf32>
  %a64 = arith.extsi %a : i32 to i64
  %sum = arith.addi %a64, %b : i64
  return %y, %sum : tensor<4xf32>, i64
}
