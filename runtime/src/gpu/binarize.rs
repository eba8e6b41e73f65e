//! `binarize` on the device: the one shader of [`binarize_shader`] for every element type, split
//! into dispatches of whole rows whose windows fit the device's bindings. Bit-identical to the CPU:
//! both compare exactly, the device through order-preserving keys the host computes for the
//! thresholds.

use super::{GpuExecutor, GpuRegion, GpuTensor, split};
use crate::api::binarize::{BINARIZE, Shape, Thresholds, bytes_shape, packed_bytes, shape_of};
use crate::cpu::binarize::float_key;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::op::{BitOrder, GpuKernel, OpInfo};
use crate::validate::desc::TensorDesc;
use crate::{DataType, Tensor, TensorView, Threshold};
use tensorbits_core::wgsl::{BINARIZE_PARAMS_BYTES, Layout, WORKGROUP_SIZE, binarize_shader};

/// What pipelines and labels name the shader by.
static INFO: OpInfo = OpInfo::named(BINARIZE);

/// Each threshold as the shader reads it: key low, key high, mode (0 above the key, 1 always, 2
/// never), 0.
fn cut_table(t: &Thresholds) -> Vec<u8> {
    let (bits, always) = t.parts();
    let dtype = t.data_type();
    let w = dtype.size() as u32 * 8;
    let mut out = Vec::with_capacity(bits.len() * 16);
    for (&b, &a) in bits.iter().zip(always) {
        let (key, mode) = if a {
            (0, 1u32)
        } else if dtype.is_float() {
            match float_key(b, w) {
                0 => (0, 2),
                k => (k, 0),
            }
        } else if dtype == DataType::Bool {
            (u64::from(b != 0), 0)
        } else if dtype.is_signed() {
            (b ^ (1u64 << (w - 1)), 0)
        } else {
            (b, 0)
        };
        for v in [key as u32, (key >> 32) as u32, mode, 0] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

/// The shader's key kind for a type: 0 unsigned, 1 signed, 2 float, 3 bool.
fn kind(dtype: DataType) -> u32 {
    match dtype {
        DataType::Bool => 3,
        d if d.is_float() => 2,
        d if d.is_signed() => 1,
        _ => 0,
    }
}

impl GpuExecutor {
    /// Records `binarize` of the packed rows in `x` (from byte `x_offset`; of the thresholds'
    /// type) into `out` (from byte `out_offset`): whole words are read and written back with
    /// only the codes' bytes replaced.
    fn encode_binarize(
        &self,
        (x, x_offset): (&wgpu::Buffer, u64),
        s: &Shape,
        t: &Thresholds,
        bitorder: BitOrder,
        (out, out_offset): (&wgpu::Buffer, u64),
        enc: &mut wgpu::CommandEncoder,
    ) -> Result<()> {
        let dtype = t.data_type();
        if s.rows == 0 || s.d == 0 {
            return Ok(());
        }
        let es = dtype.size() as u64;
        let row_in = s.d as u64 * es;
        let row_out = s.nb as u64;
        // Windows stay below 2^31 bytes, so the shader's element and byte indices fit a u32.
        let max = self.limits.max_binding.min(1 << 31);
        let rows = s.rows as u64;
        // Each dispatch binds whole rows; its windows start up to an offset alignment before
        // them.
        let chunk = max.saturating_sub(self.limits.offset_align) / row_in.max(row_out).max(4);
        if chunk == 0 {
            return Err(Error::GpuUnsupported {
                what: format!(
                    "{BINARIZE}: a row of x needs {row_in} bytes in one binding, more than this \
                     device's max_storage_buffer_binding_size ({} bytes)",
                    self.limits.max_binding
                ),
            });
        }
        let table = cut_table(t);
        if table.len() as u64 > self.limits.max_binding {
            return Err(Error::GpuUnsupported {
                what: format!(
                    "{BINARIZE}: the table of {} thresholds needs {} bytes in one binding, more \
                     than this device's max_storage_buffer_binding_size ({} bytes)",
                    t.len(),
                    table.len(),
                    self.limits.max_binding
                ),
            });
        }
        let cuts = self.storage_buffer("tensorbits thresholds", table.len(), &table)?;
        static KERNEL: std::sync::OnceLock<GpuKernel> = std::sync::OnceLock::new();
        let kernel = KERNEL.get_or_init(|| GpuKernel {
            input: DataType::U32,
            output: DataType::U8,
            layout: Layout::Contiguous,
            source: String::leak(binarize_shader()),
        });
        let pipeline = self.pipeline(&INFO, kernel, 2)?;
        let mut row0 = 0u64;
        while row0 < rows {
            let n = chunk.min(rows - row0);
            let out_bytes = n * row_out;
            let (xw, x_first) = split::window(
                x_offset + row0 * row_in,
                n * s.d as u64,
                es,
                4,
                &self.limits,
            );
            let (ow, out_first) =
                split::window(out_offset + row0 * row_out, out_bytes, 1, 4, &self.limits);
            let mut params = Vec::with_capacity(BINARIZE_PARAMS_BYTES);
            for v in [
                out_bytes,
                row_out,
                s.d as u64,
                es,
                u64::from(kind(dtype)),
                u64::from(bitorder == BitOrder::Big),
                u64::from(t.len() > 1),
                x_first,
                out_first,
                0,
                0,
                0,
            ] {
                params.extend_from_slice(&split::word(v).to_le_bytes());
            }
            let groups = split::groups(
                (out_first + out_bytes).div_ceil(4),
                u64::from(WORKGROUP_SIZE),
                &self.limits,
            );
            self.dispatch(
                &pipeline,
                &params,
                &[(x, xw), (&cuts, Self::whole(&cuts)), (out, ow)],
                groups,
                enc,
            )?;
            row0 += n;
        }
        Ok(())
    }

    /// [`binarize`](crate::binarize) on this device: `x` is copied to it, packed, and the codes
    /// back. Bit-identical to the CPU.
    pub fn binarize<'a, 'b, T: Element>(
        &self,
        x: impl Into<TensorView<'a, T>>,
        threshold: impl Into<Threshold<'b, T>>,
        bitorder: BitOrder,
    ) -> Result<Tensor<u8>> {
        let x = self.upload(x)?;
        let codes = self.binarize_on(&x, threshold, bitorder)?;
        self.download(&codes)
    }

    /// [`binarize`](crate::binarize) of a device tensor into a new one, without leaving the device.
    pub fn binarize_on<'b, T: Element>(
        &self,
        x: &GpuTensor<T>,
        threshold: impl Into<Threshold<'b, T>>,
        bitorder: BitOrder,
    ) -> Result<GpuTensor<u8>> {
        let t = Thresholds::typed(threshold.into());
        let desc = TensorDesc::new(T::DATA_TYPE, x.shape())?;
        let s = shape_of(&desc, &t)?;
        let out = GpuTensor::new_empty(
            self,
            crate::Dims::new(&s.out).ok_or(Error::RankTooLarge {
                tensor: "x".to_owned(),
                rank: s.out.len(),
            })?,
            s.rows * s.nb,
        )?;
        self.scoped(None, |enc| {
            self.encode_binarize((x.buffer(), 0), &s, &t, bitorder, (out.buffer(), 0), enc)
        })?;
        Ok(out)
    }

    /// [`binarize_bytes`](crate::binarize_bytes) on this device: the packed codes, `x`'s shape
    /// with the last axis `ceil(D / 8)` bytes, in C order.
    pub fn binarize_bytes(
        &self,
        desc: &TensorDesc,
        bytes: &[u8],
        thresholds: &Thresholds,
        bitorder: BitOrder,
    ) -> Result<Vec<u8>> {
        let s = bytes_shape(desc, bytes, thresholds)?;
        let x = packed_bytes(desc, bytes)?;
        let n = s.rows * s.nb;
        if n == 0 {
            return Ok(Vec::new());
        }
        let xb = self.storage_buffer("tensorbits x", x.len(), &x)?;
        let out = self.storage_buffer("tensorbits codes", n, &[])?;
        self.scoped(None, |enc| {
            self.encode_binarize((&xb, 0), &s, thresholds, bitorder, (&out, 0), enc)
        })?;
        let mut codes = self.read_bytes(&out, 0, (n as u64).div_ceil(4) * 4)?;
        codes.truncate(n);
        Ok(codes)
    }

    /// [`binarize_bytes`](crate::binarize_bytes) on regions of the caller's buffers, without
    /// leaving the device: `x` a packed (C-order) tensor at any offset that is a multiple of its
    /// element size, `out` packed `u8` of `x`'s shape with the last axis `ceil(D / 8)`, whatever
    /// it holds; no byte outside it changes (the words it shares with its neighbours are written
    /// back with their bytes). `x` may lie in the same buffer (it is then read from a copy). Validated before any work is recorded; recorded into `encoder`, or
    /// submitted here without one.
    pub fn binarize_into(
        &self,
        x: &GpuRegion<'_>,
        thresholds: &Thresholds,
        bitorder: BitOrder,
        out: &GpuRegion<'_>,
        encoder: Option<&mut wgpu::CommandEncoder>,
    ) -> Result<()> {
        let unsupported = |what: String| Error::GpuUnsupported {
            what: format!("{BINARIZE}: {what}"),
        };
        x.desc.validate_as("x", false)?;
        if x.desc.strides().is_some() {
            return Err(unsupported(
                "x must be packed (C order) on the GPU".to_owned(),
            ));
        }
        let s = shape_of(&x.desc, thresholds)?;
        if out.desc.data_type() != DataType::U8
            || out.desc.sizes() != s.out.as_slice()
            || out.desc.strides().is_some()
        {
            return Err(Error::BadArgument {
                op: BINARIZE,
                reason: format!(
                    "the codes are packed u8 of shape {:?}; got {} {:?}{}",
                    s.out,
                    out.desc.data_type(),
                    out.desc.sizes(),
                    if out.desc.strides().is_some() {
                        " with strides"
                    } else {
                        ""
                    }
                ),
            });
        }
        super::check_region(x, "x")?;
        super::check_region(out, "codes")?;
        self.scoped(encoder, |enc| {
            // A buffer cannot be bound for reading and writing in one dispatch: `x` in the codes'
            // buffer (a framework's pooled buffer holds both) is read from a copy on the device.
            let copy = if x.buffer == out.buffer {
                Some(self.copy_region(x, enc)?)
            } else {
                None
            };
            let source = match &copy {
                Some((b, o)) => (b, *o),
                None => (x.buffer, x.offset),
            };
            self.encode_binarize(
                source,
                &s,
                thresholds,
                bitorder,
                (out.buffer, out.offset),
                enc,
            )
        })
    }
}
