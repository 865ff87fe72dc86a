// One function per kind of dispatch name IREE gives: tests/test_name_work.py reads each name's work and
// compares it with the IR count (equal where the name says enough; the differences are listed there).
func.func @matvec(%a: tensor<64x128xf32>, %x: tensor<128xf32>) -> tensor<64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %r = linalg.matvec ins(%a, %x : tensor<64x128xf32>, tensor<128xf32>) outs(%f : tensor<64xf32>) -> tensor<64xf32>
  return %r : tensor<64xf32>
}
func.func @vecmat(%x: tensor<128xf32>, %a: tensor<128x64xf32>) -> tensor<64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %r = linalg.vecmat ins(%x, %a : tensor<128xf32>, tensor<128x64xf32>) outs(%f : tensor<64xf32>) -> tensor<64xf32>
  return %r : tensor<64xf32>
}
func.func @batch_matvec(%a: tensor<4x64x128xf32>, %x: tensor<4x128xf32>) -> tensor<4x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x64xf32>) -> tensor<4x64xf32>
  %r = linalg.batch_matvec ins(%a, %x : tensor<4x64x128xf32>, tensor<4x128xf32>) outs(%f : tensor<4x64xf32>) -> tensor<4x64xf32>
  return %r : tensor<4x64xf32>
}
func.func @batch_vecmat(%x: tensor<4x128xf32>, %a: tensor<4x128x64xf32>) -> tensor<4x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x64xf32>) -> tensor<4x64xf32>
  %r = linalg.batch_vecmat ins(%x, %a : tensor<4x128xf32>, tensor<4x128x64xf32>) outs(%f : tensor<4x64xf32>) -> tensor<4x64xf32>
  return %r : tensor<4x64xf32>
}
func.func @dot(%a: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.dot ins(%a, %b : tensor<64xf32>, tensor<64xf32>) outs(%f : tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
}
func.func @matmul_one_row(%a: tensor<1x64xf32>, %b: tensor<64x48xf32>) -> tensor<1x48xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x48xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x48xf32>) -> tensor<1x48xf32>
  %r = linalg.matmul ins(%a, %b : tensor<1x64xf32>, tensor<64x48xf32>) outs(%f : tensor<1x48xf32>) -> tensor<1x48xf32>
  return %r : tensor<1x48xf32>
}
func.func @matmul_transposed_b(%a: tensor<32x64xf32>, %b: tensor<48x64xf32>) -> tensor<32x48xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x48xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%a, %b : tensor<32x64xf32>, tensor<48x64xf32>) outs(%f : tensor<32x48xf32>) -> tensor<32x48xf32>
  return %r : tensor<32x48xf32>
}
func.func @matmul_f16_into_f32(%a: tensor<32x64xf16>, %b: tensor<64x48xf16>) -> tensor<32x48xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x48xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %r = linalg.matmul ins(%a, %b : tensor<32x64xf16>, tensor<64x48xf16>) outs(%f : tensor<32x48xf32>) -> tensor<32x48xf32>
  return %r : tensor<32x48xf32>
}
func.func @matmul_i8_into_i32(%a: tensor<32x64xi8>, %b: tensor<64x48xi8>) -> tensor<32x48xi32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<32x48xi32>
  %f = linalg.fill ins(%zero : i32) outs(%e : tensor<32x48xi32>) -> tensor<32x48xi32>
  %r = linalg.matmul ins(%a, %b : tensor<32x64xi8>, tensor<64x48xi8>) outs(%f : tensor<32x48xi32>) -> tensor<32x48xi32>
  return %r : tensor<32x48xi32>
}
func.func @batch_matmul_bf16_into_f32(%a: tensor<2x32x64xbf16>, %b: tensor<2x64x48xbf16>) -> tensor<2x32x48xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x32x48xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x32x48xf32>) -> tensor<2x32x48xf32>
  %r = linalg.batch_matmul ins(%a, %b : tensor<2x32x64xbf16>, tensor<2x64x48xbf16>) outs(%f : tensor<2x32x48xf32>) -> tensor<2x32x48xf32>
  return %r : tensor<2x32x48xf32>
}
func.func @generic_matmul_transposed_b(%a: tensor<32x64xf32>, %b: tensor<48x64xf32>) -> tensor<32x48xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x48xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<32x64xf32>, tensor<48x64xf32>) outs(%f : tensor<32x48xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<32x48xf32>
  return %r : tensor<32x48xf32>
}
func.func @generic_matmul_batch_folded(%a: tensor<2x3x16x64xf32>, %b: tensor<64x48xf32>) -> tensor<2x3x16x48xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x16x48xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x16x48xf32>) -> tensor<2x3x16x48xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(b, c, m, n, k) -> (b, c, m, k)>, affine_map<(b, c, m, n, k) -> (k, n)>, affine_map<(b, c, m, n, k) -> (b, c, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%a, %b : tensor<2x3x16x64xf32>, tensor<64x48xf32>) outs(%f : tensor<2x3x16x48xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x3x16x48xf32>
  return %r : tensor<2x3x16x48xf32>
}
func.func @generic_matmul_i4_weights(%a: tensor<32x64xf32>, %b: tensor<64x48xi4>) -> tensor<32x48xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x48xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<32x64xf32>, tensor<64x48xi4>) outs(%f : tensor<32x48xf32>) {
  ^bb0(%x: f32, %y: i4, %o: f32):
    %ye = arith.sitofp %y : i4 to f32
    %m = arith.mulf %x, %ye : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<32x48xf32>
  return %r : tensor<32x48xf32>
}
func.func @generic_matvec_f16_into_f32(%a: tensor<1x64xf16>, %b: tensor<48x64xf16>) -> tensor<1x48xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x48xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x48xf32>) -> tensor<1x48xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<1x64xf16>, tensor<48x64xf16>) outs(%f : tensor<1x48xf32>) {
  ^bb0(%x: f16, %y: f16, %o: f32):
    %xe = arith.extf %x : f16 to f32
    %ye = arith.extf %y : f16 to f32
    %m = arith.mulf %xe, %ye : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x48xf32>
  return %r : tensor<1x48xf32>
}
func.func @generic_matvec(%a: tensor<48x64xf32>, %b: tensor<64xf32>) -> tensor<48xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<48xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<48xf32>) -> tensor<48xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(n, k) -> (n, k)>, affine_map<(n, k) -> (k)>, affine_map<(n, k) -> (n)>], iterator_types = ["parallel", "reduction"]} ins(%a, %b : tensor<48x64xf32>, tensor<64xf32>) outs(%f : tensor<48xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<48xf32>
  return %r : tensor<48xf32>
}
func.func @matmul_bias(%a: tensor<32x64xf32>, %b: tensor<64x48xf32>, %c: tensor<48xf32>) -> tensor<32x48xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x48xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %m = linalg.matmul ins(%a, %b : tensor<32x64xf32>, tensor<64x48xf32>) outs(%f : tensor<32x48xf32>) -> tensor<32x48xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%m, %c : tensor<32x48xf32>, tensor<48xf32>) outs(%e : tensor<32x48xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<32x48xf32>
  return %r : tensor<32x48xf32>
}
func.func @matmul_accumulating(%a: tensor<32x64xf32>, %b: tensor<64x48xf32>, %c: tensor<32x48xf32>) -> tensor<32x48xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<32x64xf32>, tensor<64x48xf32>) outs(%c : tensor<32x48xf32>) -> tensor<32x48xf32>
  return %r : tensor<32x48xf32>
}
func.func @max_pool_batched(%x: tensor<2x8x18x18xf32>) -> tensor<2x8x16x16xf32> {
  %ninf = arith.constant -3.40282347E+38 : f32
  %k = tensor.empty() : tensor<3x3xf32>
  %e = tensor.empty() : tensor<2x8x16x16xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<2x8x16x16xf32>) -> tensor<2x8x16x16xf32>
  %r = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %k : tensor<2x8x18x18xf32>, tensor<3x3xf32>) outs(%f : tensor<2x8x16x16xf32>) -> tensor<2x8x16x16xf32>
  return %r : tensor<2x8x16x16xf32>
}
func.func @sum_pool(%x: tensor<1x18x18x8xf32>) -> tensor<1x16x16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %k = tensor.empty() : tensor<3x3xf32>
  %e = tensor.empty() : tensor<1x16x16x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x16x8xf32>) -> tensor<1x16x16x8xf32>
  %r = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %k : tensor<1x18x18x8xf32>, tensor<3x3xf32>) outs(%f : tensor<1x16x16x8xf32>) -> tensor<1x16x16x8xf32>
  return %r : tensor<1x16x16x8xf32>
}
func.func @conv_batched(%x: tensor<2x18x18x8xf32>, %w: tensor<3x3x8x16xf32>) -> tensor<2x16x16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x16x16x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x16x16x16xf32>) -> tensor<2x16x16x16xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<2x18x18x8xf32>, tensor<3x3x8x16xf32>) outs(%f : tensor<2x16x16x16xf32>) -> tensor<2x16x16x16xf32>
  return %r : tensor<2x16x16x16xf32>
}
func.func @reduce_two_dims(%a: tensor<8x16x64xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i)>], iterator_types = ["parallel", "reduction", "reduction"]} ins(%a : tensor<8x16x64xf32>) outs(%f : tensor<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
func.func @broadcast(%a: tensor<64xf32>) -> tensor<32x64xf32> {
  %e = tensor.empty() : tensor<32x64xf32>
  %r = linalg.broadcast ins(%a : tensor<64xf32>) outs(%e : tensor<32x64xf32>) dimensions = [0]
  return %r : tensor<32x64xf32>
}
func.func @add_transposed(%a: tensor<32x64xf32>, %b: tensor<64x32xf32>) -> tensor<32x64xf32> {
  %e = tensor.empty() : tensor<32x64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<32x64xf32>, tensor<64x32xf32>) outs(%e : tensor<32x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<32x64xf32>
  return %r : tensor<32x64xf32>
}
func.func @softmax_squared(%a: tensor<4x128xf32>) -> tensor<4x128xf32> {
  %e = tensor.empty() : tensor<4x128xf32>
  %s = linalg.softmax dimension(1) ins(%a : tensor<4x128xf32>) outs(%e : tensor<4x128xf32>) -> tensor<4x128xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<4x128xf32>) outs(%e : tensor<4x128xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<4x128xf32>
  return %r : tensor<4x128xf32>
}
