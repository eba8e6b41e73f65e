"""Binary-embedding search as it is done today, with numpy and tensorbits only.

Float embeddings are binarized to one bit per dimension (`np.packbits(emb > 0, axis=-1)`: 32x
smaller), searched exactly by Hamming distance with `tb.knn`, taking more candidates than needed
(oversampling), and the candidates are rescored with the float query against their unpacked bits,
as sentence-transformers' `semantic_search_faiss(..., rescore=True)` does, or with the candidates'
float embeddings where those are kept. It prints the share of the true 10 nearest neighbours (by
float dot product) that each stage finds.
"""
import numpy as np

import tensorbits as tb

rng = np.random.default_rng(42)
DOCS, QUERIES, DIM, TOP, OVERSAMPLE = 20_000, 100, 384, 10, 4

# Documents around 2,000 topics, and queries near documents: unit-length float32 embeddings.
def unit(x):
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def noise(n, scale):
    return scale * unit(rng.standard_normal((n, DIM), dtype=np.float32))


topics = unit(rng.standard_normal((2000, DIM), dtype=np.float32))
docs = unit(topics[rng.integers(0, 2000, DOCS)] + noise(DOCS, 0.7))
queries = unit(docs[rng.integers(0, DOCS, QUERIES)] + noise(QUERIES, 0.5))

# The truth: the 10 largest float dot products of each query.
truth = np.argsort(-(queries @ docs.T), axis=1, kind="stable")[:, :TOP]

# 1. Binarize: one bit per dimension, 48 bytes per document instead of 1,536.
doc_codes = np.packbits(docs > 0, axis=-1)
query_codes = np.packbits(queries > 0, axis=-1)
print(f"codes: {doc_codes.shape} {doc_codes.dtype} ({docs.nbytes // doc_codes.nbytes}x smaller)")

# 2. Exact Hamming search, with oversampling: 4x the candidates needed.
distances, candidates = tb.knn(query_codes, doc_codes, k=TOP * OVERSAMPLE)
print(f"knn: distances {distances.shape} {distances.dtype}, indices {candidates.dtype}")

# 3. Rescore the candidates: the float query against each candidate's bits (0 or 1), as
#    sentence-transformers does, and keep the best 10.
bits = np.unpackbits(doc_codes[candidates], axis=-1).astype(np.float32)  # [QUERIES, 40, DIM]
scores = np.einsum("qd,qkd->qk", queries, bits)
order = np.argsort(-scores, axis=1, kind="stable")[:, :TOP]
rescored = np.take_along_axis(candidates, order, axis=1)


# 4. Or, where the float embeddings are kept (on disk), rescore the candidates with those.
exact_scores = np.einsum("qd,qkd->qk", queries, docs[candidates])
order = np.argsort(-exact_scores, axis=1, kind="stable")[:, :TOP]
rescored_float = np.take_along_axis(candidates, order, axis=1)


def recall(found):
    return np.mean([len(set(f) & set(t)) / TOP for f, t in zip(found, truth)])


print(f"recall@{TOP}, Hamming distance only:      {recall(candidates[:, :TOP]):.3f}")
print(f"recall@{TOP}, rescored against the bits:  {recall(rescored):.3f}")
print(f"recall@{TOP}, rescored against floats:    {recall(rescored_float):.3f}")
