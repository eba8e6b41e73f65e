"""Binary-embedding search end to end with tensorbits: binarize, knn with oversampling, rescore.

Float embeddings are binarized to one bit per dimension (`tb.binarize`, equal to
`np.packbits(emb > 0, axis=-1)`: 32x smaller), searched exactly by Hamming distance with `tb.knn`,
taking 4x more candidates than needed (oversampling), and the candidates are rescored with the
float query against their packed codes (`tb.rescore`, what sentence-transformers'
`semantic_search_faiss(..., rescore=True)` does after unpacking them). It prints recall@10 against
exact float search (the true 10 nearest neighbours by dot product) at each stage, and checks that
`tb.rescore` ranks the candidates as the numpy rescoring does.
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

# The truth: exact float search, the 10 largest dot products of each query.
truth = np.argsort(-(queries @ docs.T), axis=1, kind="stable")[:, :TOP]

# 1. Binarize: one bit per dimension, 48 bytes per document instead of 1,536.
doc_codes = tb.binarize(docs)
query_codes = tb.binarize(queries)
assert np.array_equal(doc_codes, np.packbits(docs > 0, axis=-1))
print(f"codes: {doc_codes.shape} {doc_codes.dtype} ({docs.nbytes // doc_codes.nbytes}x smaller)")

# 2. Exact Hamming search, with oversampling: 4x the candidates needed.
distances, candidates = tb.knn(query_codes, doc_codes, k=TOP * OVERSAMPLE)
print(f"knn: distances {distances.shape} {distances.dtype}, indices {candidates.dtype}")

# 3. Rescore the candidates with the float queries against their packed codes: the best 10.
scores, rescored = tb.rescore(queries, doc_codes, candidates, TOP)
print(f"rescore: scores {scores.shape} {scores.dtype}, indices {rescored.dtype}")

# The numpy way (unpack, then a float product with the 0/1 bits) ranks them the same.
bits = np.unpackbits(doc_codes[candidates], axis=-1).astype(np.float64)
numpy_scores = np.einsum("qd,qkd->qk", queries.astype(np.float64), bits)
order = np.lexsort((candidates, -numpy_scores), axis=1)[:, :TOP]
assert np.array_equal(rescored, np.take_along_axis(candidates, order, axis=1))


def recall(found):
    return np.mean([len(set(f) & set(t)) / TOP for f, t in zip(found, truth)])


print(f"recall@{TOP}, Hamming distance only:  {recall(candidates[:, :TOP]):.3f}")
print(f"recall@{TOP}, after tb.rescore:       {recall(rescored):.3f}")
