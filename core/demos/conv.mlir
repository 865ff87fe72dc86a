// The seed conv: 1x64x128x128 input, 256x64x3x3 filter, f32, stride 1, no padding.
func.func @conv(%x: tensor<1x64x128x128xf32>, %w: tensor<256x64x3x3xf32>) -> tensor<1x256x126x126xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x256x126x126xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x256x126x126xf32>) -> tensor<1x256x126x126xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x64x128x128xf32>, tensor<256x64x3x3xf32>) outs(%f : tensor<1x256x126x126xf32>) -> tensor<1x256x126x126xf32>
  return %c : tensor<1x256x126x126xf32>
}
