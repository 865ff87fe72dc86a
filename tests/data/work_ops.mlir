// One function per kind of op whose FLOPs and bytes tests/test_work.py counts by hand.
func.func @batch_matmul(%a: tensor<4x64x32xf32>, %b: tensor<4x32x16xf32>) -> tensor<4x64x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x64x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x64x16xf32>) -> tensor<4x64x16xf32>
  %r = linalg.batch_matmul ins(%a, %b : tensor<4x64x32xf32>, tensor<4x32x16xf32>) outs(%f : tensor<4x64x16xf32>) -> tensor<4x64x16xf32>
  return %r : tensor<4x64x16xf32>
}
func.func @conv_strided_dilated(%x: tensor<1x33x33x8xf32>, %w: tensor<3x3x8x16xf32>) -> tensor<1x15x15x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x15x15x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x15x15x16xf32>) -> tensor<1x15x15x16xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<2> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%x, %w : tensor<1x33x33x8xf32>, tensor<3x3x8x16xf32>) outs(%f : tensor<1x15x15x16xf32>) -> tensor<1x15x15x16xf32>
  return %r : tensor<1x15x15x16xf32>
}
func.func @conv_grouped(%x: tensor<1x2x4x10x10xf32>, %w: tensor<2x8x4x3x3xf32>) -> tensor<1x2x8x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x8x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x8x8x8xf32>) -> tensor<1x2x8x8x8xf32>
  %r = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x2x4x10x10xf32>, tensor<2x8x4x3x3xf32>) outs(%f : tensor<1x2x8x8x8xf32>) -> tensor<1x2x8x8x8xf32>
  return %r : tensor<1x2x8x8x8xf32>
}
func.func @conv_depthwise(%x: tensor<1x10x10x8xf32>, %w: tensor<3x3x8xf32>) -> tensor<1x8x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %r = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x10x10x8xf32>, tensor<3x3x8xf32>) outs(%f : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %r : tensor<1x8x8x8xf32>
}
func.func @conv_3d(%x: tensor<1x6x6x6x4xf32>, %w: tensor<3x3x3x4x8xf32>) -> tensor<1x4x4x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x4x4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x4x4x8xf32>) -> tensor<1x4x4x4x8xf32>
  %r = linalg.conv_3d_ndhwc_dhwcf {dilations = dense<1> : tensor<3xi64>, strides = dense<1> : tensor<3xi64>} ins(%x, %w : tensor<1x6x6x6x4xf32>, tensor<3x3x3x4x8xf32>) outs(%f : tensor<1x4x4x4x8xf32>) -> tensor<1x4x4x4x8xf32>
  return %r : tensor<1x4x4x4x8xf32>
}
func.func @elementwise(%a: tensor<16x16xf32>, %b: tensor<16x16xf32>, %c: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %e = tensor.empty() : tensor<16x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%a, %b, %c : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %m, %z : f32
    %t = math.exp %s : f32
    %zero = arith.constant 0.0 : f32
    %u = arith.maximumf %t, %zero : f32
    linalg.yield %u : f32
  } -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}
func.func @row_sum(%a: tensor<16x64xf32>) -> tensor<16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<16x64xf32>) outs(%f : tensor<16xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}
func.func @transpose(%a: tensor<32x64xf32>) -> tensor<64x32xf32> {
  %e = tensor.empty() : tensor<64x32xf32>
  %r = linalg.transpose ins(%a : tensor<32x64xf32>) outs(%e : tensor<64x32xf32>) permutation = [1, 0]
  return %r : tensor<64x32xf32>
}
func.func @softmax(%a: tensor<4x128xf32>) -> tensor<4x128xf32> {
  %e = tensor.empty() : tensor<4x128xf32>
  %r = linalg.softmax dimension(1) ins(%a : tensor<4x128xf32>) outs(%e : tensor<4x128xf32>) -> tensor<4x128xf32>
  return %r : tensor<4x128xf32>
}
func.func @matmul_f16(%a: tensor<32x64xf16>, %b: tensor<64x16xf16>) -> tensor<32x16xf16> {
  %zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<32x16xf16>
  %f = linalg.fill ins(%zero : f16) outs(%e : tensor<32x16xf16>) -> tensor<32x16xf16>
  %r = linalg.matmul ins(%a, %b : tensor<32x64xf16>, tensor<64x16xf16>) outs(%f : tensor<32x16xf16>) -> tensor<32x16xf16>
  return %r : tensor<32x16xf16>
}
func.func @sort(%a: tensor<64xf32>) -> tensor<64xf32> {
  %r = iree_linalg_ext.sort dimension(0) outs(%a : tensor<64xf32>) {
  ^bb0(%x: f32, %y: f32):
    %c = arith.cmpf olt, %x, %y : f32
    iree_linalg_ext.yield %c : i1
  } -> tensor<64xf32>
  return %r : tensor<64xf32>
}
