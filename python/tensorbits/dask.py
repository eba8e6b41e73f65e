"""Exact knn and range search over codes that outgrow one machine, on Dask.

``pip install tensorbits[dask]``. ``b`` is a dask array of codes chunked along its rows (from
``dask.array.from_npy_stack``, zarr, or any source); each chunk is searched where it lies, its
indices shifted by the chunk's first row, and the chunks' results are merged by a tree of
:func:`tensorbits.merge_topk`. Computed, the results equal :func:`tensorbits.knn` and
:func:`tensorbits.range_search` on the whole arrays, bit for bit, ties included, for any chunking,
on any scheduler (threads, processes, a ``dask.distributed`` cluster).

>>> import dask.array as da
>>> import tensorbits.dask as tbd
>>> codes = da.from_array(np.arange(64, dtype=np.uint8).reshape(64, 1), chunks=(10, 1))
>>> d, i = tbd.knn(np.array([[3]], dtype=np.uint8), codes, k=3)
>>> d.compute(), i.compute()
(array([[0, 1, 1]], dtype=uint32), array([[3, 1, 2]]))
"""

import glob
import os
import re

import numpy as np

import tensorbits as _tb

try:
    import dask
    import dask.array as da
    import dask.sizeof
except ImportError:  # pragma: no cover - the message is the point
    raise ImportError(
        "tensorbits.dask needs dask: pip install 'tensorbits[dask]' (or 'dask[array]')"
    ) from None

__all__ = ["from_npy_files", "knn", "range_search"]


def _natural(path):
    """A sort key that puts ``shard_2.npy`` before ``shard_10.npy``: the path's runs of digits as
    numbers, then the path itself (``shard_1`` before ``shard_01``)."""
    parts = re.split(r"([0-9]+)", os.path.abspath(path))
    return [int(p) if k % 2 else p for k, p in enumerate(parts)], path


def _header(path):
    """The shape and dtype of the ``.npy`` file at ``path``, from its header alone."""
    with open(path, "rb") as f:  # an OSError (FileNotFoundError, ...) names the file
        magic = f.read(6)
    if magic != b"\x93NUMPY":
        raise ValueError(f"{path}: not a .npy file (np.save writes them)")
    try:
        m = np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as e:
        raise ValueError(f"{path}: a .npy file numpy cannot map: {e}") from None
    shape, dtype = m.shape, m.dtype
    del m
    if len(shape) != 2:
        raise ValueError(f"{path}: codes are [N, K]; this file holds an array of shape {shape}")
    return shape, dtype


def _stamp(path):
    """What tells a file rewritten: its inode, size and time of change."""
    st = os.stat(path)
    return st.st_ino, st.st_size, st.st_mtime_ns


class _Shard(np.memmap):
    """A shard's whole file, mapped. Pickled (to move it to another worker, or to spill it) it is
    its path, which the other side maps again, not its bytes; and dask counts it as those few
    bytes, not the file's, whose pages are the system's file cache. A view of part of it, or in
    another layout, is an array like any other."""

    _tb_file = None

    def _whole(self):
        """The arguments of the :func:`_load` that made this array, if it is still that view."""
        file = self._tb_file
        if file is None:
            return None
        (path, shape, dtype, stamp), (data, strides) = file
        same = (self.shape == shape and self.dtype == dtype and self.strides == strides
                and self.__array_interface__["data"][0] == data)
        return (path, shape, dtype, stamp) if same else None

    def __reduce__(self):
        whole = self._whole()
        return (_load, whole) if whole else np.asarray(self).__reduce__()


def _load(path, shape, dtype, stamp):
    """The shard at ``path``, memory-mapped, the file it was when the graph was built."""
    now = _stamp(path)
    m = np.load(path, mmap_mode="r", allow_pickle=False)
    if now != stamp or m.shape != shape or m.dtype != dtype:
        raise ValueError(f"{path} changed after it was opened ({shape} {dtype} then, "
                         f"{m.shape} {m.dtype} now): make the array again")
    shard = m.view(_Shard)
    layout = (shard.__array_interface__["data"][0], shard.strides)
    shard._tb_file = ((path, shape, dtype, stamp), layout)
    return shard


@dask.sizeof.sizeof.register(_Shard)
def _sizeof_shard(x):
    whole = x._whole()
    return x.nbytes if whole is None else 64 + len(whole[0])


def from_npy_files(paths):
    """Codes saved one ``.npy`` file a shard, as a dask array with a chunk a file.

    Each file is read on the worker that searches it, memory-mapped (``np.load(path,
    mmap_mode="r")``): nothing is read until a search runs, and only the pages it touches. This
    is the layout of ``np.save`` per shard and of the CLI's ``-o``; a directory written by
    ``dask.array.to_npy_stack`` is read by ``dask.array.from_npy_stack`` instead.

    Parameters
    ----------
    paths : str, os.PathLike or sequence of them
        A file, a directory (its ``*.npy`` files in natural order: ``shard_2.npy`` before
        ``shard_10.npy``), a glob pattern (its matches in the same order, by their whole
        paths), or the files, in the order given. A shard's rows are numbered after those of
        the files before it.

    Returns
    -------
    dask.array.Array
        ``[N, K]``, chunked by file. Every file must hold 2-D codes of one dtype and width;
        anything else raises ``ValueError`` naming the file (``OSError`` where a file cannot be
        read), before any work. A file rewritten after the array was made (another inode,
        size or time) raises ``ValueError`` when a task reads it.
    """
    if isinstance(paths, (str, os.PathLike)):
        where = os.fspath(paths)
        if os.path.isfile(where):
            files = [where]
        elif os.path.isdir(where):
            files = sorted(glob.glob(os.path.join(glob.escape(where), "*.npy")), key=_natural)
            if not files:
                raise ValueError(f"{where}: no .npy files in this directory")
        else:
            files = sorted(glob.glob(where), key=_natural)
            if not files:
                raise ValueError(f"{where}: no file matches")
    else:
        files = [os.fspath(p) for p in paths]
        if not files:
            raise ValueError("from_npy_files: no files given")
    chunks, width, dtype = [], None, None
    for f in files:
        # The stamp before the header: a file rewritten between them is seen when it is mapped.
        stamp = _stamp(f)
        shape, dt = _header(f)
        if dtype is None:
            width, dtype = shape[1], dt
        elif (shape[1], dt) != (width, dtype):
            raise ValueError(f"{f}: codes [{shape[0]}, {shape[1]}] {dt}, where {files[0]} holds "
                             f"[.., {width}] {dtype}: the shards must agree")
        # Workers may run elsewhere than here: the path whole. The task's key changes with the
        # file, so that a cached result is never stale.
        f = os.path.abspath(f)
        key = "npy-" + dask.base.tokenize(f, stamp)
        part = dask.delayed(_load, pure=True)(f, shape, dt, stamp, dask_key_name=key)
        chunks.append(da.from_delayed(part, shape, dt))
    return da.concatenate(chunks, axis=0)


def _codes(b):
    """``b`` as a dask array of 2-D codes with whole rows in each chunk."""
    if not isinstance(b, da.Array):
        raise TypeError(f"b: expected a dask array of codes chunked along rows, got {type(b).__name__}")
    if b.ndim != 2:
        raise ValueError(f"b: codes are [N, K]; got {b.ndim} dimensions")
    if len(b.chunks[1]) > 1:
        b = b.rechunk({1: -1})
    return b


def _queries(a):
    """The queries as a list of (row chunk, rows) pairs: numpy arrays or dask arrays' blocks."""
    if isinstance(a, da.Array):
        if a.ndim != 2:
            raise ValueError(f"a: queries are [M, K]; got {a.ndim} dimensions")
        if len(a.chunks[1]) > 1:
            a = a.rechunk({1: -1})
        return [(a.blocks[r, 0], n) for r, n in enumerate(a.chunks[0])]
    a = np.asarray(a)
    if a.ndim != 2:
        raise ValueError(f"a: queries are [M, K]; got {a.ndim} dimensions")
    # One task holds the queries, which every chunk's task reads.
    return [(dask.delayed(a, pure=True), a.shape[0])]


def _probe(a):
    """One row of zeros of the queries' dtype and width, for the checks before any work."""
    dtype = a.dtype if isinstance(a, da.Array) else np.asarray(a).dtype
    return np.zeros((1, a.shape[1] if isinstance(a, da.Array) else np.shape(a)[1]), dtype)


def _largest(op, largest, dtype):
    """Whether the op (or ``largest``) ranks the largest values first: from a two-code knn."""
    if largest is not None:
        return bool(largest)
    # A code against itself and against its complement (and, where those tie, all ones against
    # all ones and all zeros): the two results in the op's order.
    for q, b in (([0xF0], [[0xF0], [0x0F]]), ([0xFF], [[0xFF], [0x00]])):
        d, _ = _tb.knn(np.array([q], np.uint8), np.array(b, np.uint8), 2, op=op, dtype=dtype)
        if d[0, 0] != d[0, 1]:
            return bool(d[0, 0] > d[0, 1])
    return False


def _offsets(chunks):
    out, at = [], 0
    for n in chunks:
        out.append(at)
        at += n
    return out


def _part(a, b, k, offset, options):
    return _tb.knn(np.asarray(a), np.asarray(b), min(k, b.shape[0]), id_offset=offset, **options)


def _merge(parts, k, largest):
    return _tb.merge_topk(list(parts), k, largest=largest)


def knn(a, b, k, *, split_every=8, **options):
    """The ``k`` rows of ``b`` nearest each row of ``a``, as lazy dask arrays.

    Parameters
    ----------
    a : array_like or dask.array.Array
        Queries ``[M, K]``; a dask array's row chunks give the results' row chunks.
    b : dask.array.Array
        Codes ``[N, K]`` of the same dtype, chunked along rows (chunks along ``K`` are joined).
    k : int
        Neighbours per row, from 0 to ``N``.
    split_every : int, default 8
        Parts merged by one task of the merge tree.
    **options
        As :func:`tensorbits.knn` takes them: ``op``, ``largest``, ``bits``, ``bitorder``,
        ``dtype`` (``device`` and ``level`` too, run on each worker).

    Returns
    -------
    distances, indices : dask.array.Array
        ``[M, k]``, computing to what :func:`tensorbits.knn` gives on the whole arrays.
    """
    k = _tb._count(k, "k")
    split_every = _tb._count(split_every, "split_every")
    if split_every < 2:
        raise ValueError(f"split_every must be at least 2, got {split_every}")
    if "id_offset" in options:
        raise TypeError("id_offset: the chunks' offsets are set here")
    b = _codes(b)
    n = b.shape[0]
    if k > n:
        raise ValueError(f"knn: k = {k} is more than the {n} rows of b")
    queries = _queries(a)
    # The results' dtype and order, and the options' errors, from a call on one row.
    probe_d, _ = _tb.knn(_probe(a), np.zeros((1, b.shape[1]), b.dtype), min(k, 1), **options)
    largest = _largest(options.get("op", "hamming_cdist"), options.get("largest"),
                       options.get("dtype"))
    offsets = _offsets(b.chunks[0])
    blocks = [b.blocks[j, 0] for j in range(len(b.chunks[0]))]
    exact = options
    if probe_d.dtype.kind == "f" and probe_d.dtype != np.float64:
        # A similarity's float32 can round two fractions alike, which the merge would then rank
        # by index: the parts rank by their float64 results (different for different fractions),
        # rounded to float32 once merged, as the whole call's are.
        exact = dict(options, dtype="float64")
    part = dask.delayed(_part, pure=True)
    merge = dask.delayed(_merge, pure=True)
    dists, idxs = [], []
    for qa, rows in queries:
        level = [part(qa, blk, k, off, exact)
                 for blk, off, m in zip(blocks, offsets, b.chunks[0]) if m > 0]
        while len(level) > 1:
            level = [merge(level[i:i + split_every], k, largest)
                     for i in range(0, len(level), split_every)]
        if not level:
            level = [dask.delayed(lambda r: (np.zeros((r, 0), probe_d.dtype),
                                             np.zeros((r, 0), np.int64)))(rows)]
        top = level[0]
        if exact is not options:
            top = dask.delayed(lambda t: (t[0].astype(probe_d.dtype), t[1]), pure=True)(top)
        dists.append(da.from_delayed(top[0], (rows, k), probe_d.dtype))
        idxs.append(da.from_delayed(top[1], (rows, k), np.int64))
    return da.concatenate(dists, axis=0), da.concatenate(idxs, axis=0)


def _range_part(a, b, threshold, offset, options):
    lims, values, indices = _tb.range_search(np.asarray(a), np.asarray(b), threshold, **options)
    return lims, values, indices + offset


def _range_join(parts, rows, dtype):
    """Each row's hits of every part, in the parts' order (ascending indices)."""
    if not parts:
        return np.zeros(rows + 1, np.int64), np.empty(0, dtype), np.empty(0, np.int64)
    counts = sum(np.diff(lp) for lp, _, _ in parts)
    lims = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    # Each hit's row; a stable sort by row keeps the parts' order within a row.
    row_of = np.concatenate([np.repeat(np.arange(rows), np.diff(lp)) for lp, _, _ in parts])
    order = np.argsort(row_of, kind="stable")
    values = np.concatenate([vp for _, vp, _ in parts])[order]
    indices = np.concatenate([ip for _, _, ip in parts])[order]
    return lims, values.astype(dtype, copy=False), indices


def range_search(a, b, threshold, **options):
    """Every row of ``b`` within ``threshold`` of each row of ``a``, as lazy dask arrays.

    ``b`` and ``a`` as :func:`knn` takes them; ``options`` as :func:`tensorbits.range_search`
    takes them. Returns ``(lims, values, indices)``: ``lims`` ``[M + 1]``, the others of a length
    known once computed, equal to :func:`tensorbits.range_search` on the whole arrays.
    """
    b = _codes(b)
    queries = _queries(a)
    _, probe_v, _ = _tb.range_search(_probe(a), np.zeros((1, b.shape[1]), b.dtype), threshold,
                                     **options)
    offsets = _offsets(b.chunks[0])
    blocks = [b.blocks[j, 0] for j in range(len(b.chunks[0]))]
    part = dask.delayed(_range_part, pure=True)
    join = dask.delayed(_range_join, pure=True)
    pieces = []
    for qa, rows in queries:
        parts = [part(qa, blk, threshold, off, options)
                 for blk, off, m in zip(blocks, offsets, b.chunks[0]) if m > 0]
        pieces.append((join(parts, rows, probe_v.dtype), rows))
    # One list of hits: each query chunk's lims continue from the hits before it.
    total = dask.delayed(_range_concat, pure=True)([p for p, _ in pieces], probe_v.dtype)
    m = sum(r for _, r in pieces)
    lims = da.from_delayed(total[0], (m + 1,), np.int64)
    values = da.from_delayed(total[1], (np.nan,), probe_v.dtype)
    indices = da.from_delayed(total[2], (np.nan,), np.int64)
    return lims, values, indices


def _range_concat(pieces, dtype):
    lims, values, indices = [np.zeros(1, np.int64)], [np.empty(0, dtype)], []
    at = 0
    for lp, vp, ip in pieces:
        lims.append(lp[1:] + at)
        at += int(lp[-1])
        values.append(vp)
        indices.append(ip)
    return (np.concatenate(lims), np.concatenate(values),
            np.concatenate(indices) if indices else np.empty(0, np.int64))
