"""numpy and PyTorch arrays through tensorbits: element-wise ops, reversed views read in place,
Hamming distances and kNN over binary codes, the GPU, and what a bad call raises."""
import numpy as np

import tensorbits as tb

try:
    import torch
except ImportError:  # numpy alone runs everything but the torch lines
    torch = None

a = np.array([[0b1100, 0b1010], [255, 7]], dtype=np.uint8)
print("xor:", tb.bitwise_xor(a, 0b0110).tolist())                 # a Python scalar takes a's dtype
print("reversed view:", tb.bitwise_not(a[:, ::-1]).tolist())       # read where it lies, no copy
print("shift past the width:", tb.left_shift(a, 9).tolist())       # defined: 0, as numpy
print("count of int8 -1:", tb.bitwise_count(np.int8(-1)))           # 8: the stored bits

codes = np.random.default_rng(0).integers(0, 256, size=(1000, 32), dtype=np.uint8)  # 256-bit codes
queries = codes[:3].copy()
queries[:, 0] ^= 1                                                  # one bit off each of 3 codes
d, i = tb.knn(queries, codes, 2)
print("knn distances:", d.tolist(), "indices:", i.tolist())
print("cdist shape:", tb.hamming_cdist(queries, codes).shape)

if torch is not None:
    t = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    r = tb.bitwise_xor(t, torch.tensor([1, 2, 4], dtype=torch.int32))  # through DLPack, torch out
    print("torch:", type(r).__name__, r.tolist())
    print("xor-reduce of rows:", tb.bitwise_xor_reduce(t, axis=1).tolist())
else:
    print("torch: not installed, skipped")

try:
    gpu = tb.bitwise_xor(a, 0b0110, device="gpu")
    print("GPU gives the same bits:", np.array_equal(gpu, tb.bitwise_xor(a, 0b0110)))
except RuntimeError as e:
    print("no GPU:", e)

try:
    tb.left_shift(np.zeros(3, np.float32), np.zeros(3, np.float32))
except TypeError as e:
    print("TypeError:", e)
try:
    tb.bitwise_and(np.zeros((2, 3), np.uint8), np.zeros(4, np.uint8))
except ValueError as e:
    print("ValueError:", e)
