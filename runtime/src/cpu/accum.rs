//! Accumulators of reductions and pairwise ops: the type of a reduction's element results, the
//! value of an empty reduction, and folds of results into `u64` accumulators. A leaf: the
//! reduction driver, the pair drivers and the dynamic API all use it.

use crate::DataType;
use crate::element::by_elem;
use crate::op::ReduceOp;

/// The element type the map kernel of a reduction writes: `u8` counts for a sum, else the input's.
pub(crate) fn intermediate_type(op: ReduceOp, input: DataType) -> DataType {
    match op {
        ReduceOp::Sum => DataType::U8,
        _ => input,
    }
}

/// The value of an empty reduction of `dtype` elements.
pub(crate) fn identity(op: ReduceOp, dtype: DataType) -> u64 {
    op.identity(if dtype == DataType::Bool {
        1
    } else {
        dtype.bits()
    })
}

/// Folds results of `es` bytes into `acc`.
pub(crate) fn fold_into(op: ReduceOp, acc: u64, src: &[u8], es: usize) -> u64 {
    op.combine(acc, fold(op, op.identity(64), src, es))
}

/// The reduction of results of `es` bytes, starting from `id`.
pub(crate) fn fold(op: ReduceOp, id: u64, src: &[u8], es: usize) -> u64 {
    fn go<T: bytemuck::Pod + Into<u64>>(op: ReduceOp, id: u64, src: &[u8]) -> u64 {
        // The scratch buffers are `u64`s, so `src` is aligned for `T`.
        let v: &[T] = bytemuck::cast_slice(src);
        match op {
            ReduceOp::Sum => v.iter().fold(id, |a, &x| a + x.into()),
            ReduceOp::And => v.iter().fold(id, |a, &x| a & x.into()),
            ReduceOp::Or => v.iter().fold(id, |a, &x| a | x.into()),
            ReduceOp::Xor => v.iter().fold(id, |a, &x| a ^ x.into()),
        }
    }
    by_elem!(es, T => go::<T>(op, id, src))
}

/// `acc[j] = acc[j] op src[j]` for results of `es` bytes.
pub(crate) fn fold_columns(op: ReduceOp, acc: &mut [u64], src: &[u8], es: usize) {
    fn go<T: bytemuck::Pod + Into<u64>>(op: ReduceOp, acc: &mut [u64], src: &[u8]) {
        let v: &[T] = bytemuck::cast_slice(src);
        let pairs = acc.iter_mut().zip(v);
        match op {
            ReduceOp::Sum => pairs.for_each(|(a, &x)| *a += x.into()),
            ReduceOp::And => pairs.for_each(|(a, &x)| *a &= x.into()),
            ReduceOp::Or => pairs.for_each(|(a, &x)| *a |= x.into()),
            ReduceOp::Xor => pairs.for_each(|(a, &x)| *a ^= x.into()),
        }
    }
    by_elem!(es, T => go::<T>(op, acc, src))
}

/// The code of a reduction in a fused fold kernel's const parameter (see `fold_bits`).
#[doc(hidden)]
pub const fn fold_code(op: crate::op::ReduceOp) -> u8 {
    match op {
        crate::op::ReduceOp::Sum => FOLD_SUM,
        crate::op::ReduceOp::And => FOLD_AND,
        crate::op::ReduceOp::Or => FOLD_OR,
        crate::op::ReduceOp::Xor => FOLD_XOR,
    }
}

pub(crate) const FOLD_SUM: u8 = 0;
pub(crate) const FOLD_AND: u8 = 1;
pub(crate) const FOLD_OR: u8 = 2;
pub(crate) const FOLD_XOR: u8 = 3;
