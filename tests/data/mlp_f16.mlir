// demo:mlp with its first layer in f16 (f32 accumulation): a real kernel rename for gputop compare.
// A three-dispatch MLP: 256x1024 input -> matmul 1024x1024 -> relu -> matmul 1024x512 -> relu -> matmul 512x256.
// The layers have different shapes so that each compiles to its own dispatch.
func.func @mlp(%x: tensor<256x1024xf16>, %w1: tensor<1024x1024xf16>, %w2: tensor<1024x512xf32>, %w3: tensor<512x256xf32>) -> tensor<256x256xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<256x1024xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<256x1024xf32>) -> tensor<256x1024xf32>
  %m1 = linalg.matmul ins(%x, %w1 : tensor<256x1024xf16>, tensor<1024x1024xf16>) outs(%f1 : tensor<256x1024xf32>) -> tensor<256x1024xf32>
  %r1 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%m1 : tensor<256x1024xf32>) outs(%e1 : tensor<256x1024xf32>) {
  ^bb0(%a: f32, %b: f32):
    %y = arith.maximumf %a, %zero : f32
    linalg.yield %y : f32
  } -> tensor<256x1024xf32>
  %e2 = tensor.empty() : tensor<256x512xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<256x512xf32>) -> tensor<256x512xf32>
  %m2 = linalg.matmul ins(%r1, %w2 : tensor<256x1024xf32>, tensor<1024x512xf32>) outs(%f2 : tensor<256x512xf32>) -> tensor<256x512xf32>
  %r2 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%m2 : tensor<256x512xf32>) outs(%e2 : tensor<256x512xf32>) {
  ^bb0(%a: f32, %b: f32):
    %y = arith.maximumf %a, %zero : f32
    linalg.yield %y : f32
  } -> tensor<256x512xf32>
  %e3 = tensor.empty() : tensor<256x256xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<256x256xf32>) -> tensor<256x256xf32>
  %m3 = linalg.matmul ins(%r2, %w3 : tensor<256x512xf32>, tensor<512x256xf32>) outs(%f3 : tensor<256x256xf32>) -> tensor<256x256xf32>
  return %m3 : tensor<256x256xf32>
}
