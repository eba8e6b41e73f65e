//! Every generated WGSL kernel parses and validates with naga, for every op, type and layout, on any
//! machine, GPU or not. A shader that fails here cannot land.

use tensorbits::__private::Layout;
use tensorbits::{DataType, Op, OpInfo, bitwise_op};

#[bitwise_op(
    name = "BIT_SELECT",
    inputs = [a, b, mask],
    compute = (a & mask) | (b & !mask),
    broadcast = [numpy],
    in_place = [a],
    support(EXT = [u8, u16, u32, u64, i8, i16, i32, i64, f16, f32, f64, bool]),
)]
struct BitSelect;

#[bitwise_op(
    inputs = [a, b],
    compute = ((a.wrapping_shl(b) ^ !a) | (b >> 1)).wrapping_shr(3),
    broadcast = [numpy],
    support(EXT = [u8, u16, u32, u64, i8, i16, i32, i64]),
)]
struct Mixed;

#[bitwise_op(
    inputs = [a, b],
    compute = (a ^ b).count_ones(),
    broadcast = [numpy],
    output = [u8, u16, u32, u64, i8, i64],
    support(EXT = [u8, u16, u32, u64, i8, i16, i32, i64, f16, f32, f64]),
)]
struct Hamming;

fn all_ops() -> Vec<&'static OpInfo> {
    let mut v = tensorbits::ops::ALL.to_vec();
    v.extend([
        <BitSelect as Op>::INFO,
        <Mixed as Op>::INFO,
        <Hamming as Op>::INFO,
    ]);
    v
}

#[test]
fn every_shader_validates_with_naga() {
    let mut checked = 0;
    for op in all_ops() {
        for k in op.gpu_kernels() {
            let module = naga::front::wgsl::parse_str(k.source).unwrap_or_else(|e| {
                panic!(
                    "{} {:?}->{:?} {:?}: {}\n{}",
                    op.name(),
                    k.input,
                    k.output,
                    k.layout,
                    e.emit_to_string(k.source),
                    k.source
                )
            });
            let mut v = naga::valid::Validator::new(
                naga::valid::ValidationFlags::all(),
                naga::valid::Capabilities::empty(),
            );
            v.validate(&module).unwrap_or_else(|e| {
                panic!(
                    "{} {:?}->{:?} {:?}: {}\n{}",
                    op.name(),
                    k.input,
                    k.output,
                    k.layout,
                    e.emit_to_string(k.source),
                    k.source
                )
            });
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} shaders");
}

#[test]
fn every_type_has_a_kernel_for_each_layout_it_needs() {
    for op in all_ops() {
        // Element-wise ops: contiguous and strided; reductions: one; pairwise sums: tiles and knn.
        let layouts = match (op.reduce(), op.is_pairwise()) {
            (None, _) => vec![Layout::Contiguous, Layout::Strided],
            (Some(_), false) => vec![Layout::Reduce, Layout::ReduceRows],
            (Some(tensorbits::ReduceOp::Sum), true) => vec![Layout::Pairwise, Layout::Knn],
            (Some(_), true) => vec![Layout::Pairwise],
        };
        for &t in op.all_types() {
            // A ratio op's kernels count `a & b`.
            let outs = match op.ratio() {
                Some(_) => vec![DataType::U32, DataType::U64],
                None => op.output_types().map_or(vec![t], |o| o.to_vec()),
            };
            for o in outs {
                for &layout in &layouts {
                    assert!(
                        op.gpu_kernels()
                            .iter()
                            .any(|k| k.input == t && k.output == o && k.layout == layout),
                        "{}: no {layout:?} kernel for {t} -> {o}",
                        op.name()
                    );
                }
            }
        }
    }
    // Width-agnostic ops also get the vec4 word kernel; shifts and counts do not.
    let xor = <tensorbits::ops::BitXor as Op>::INFO;
    assert!(xor.gpu_kernels().iter().any(|k| k.layout == Layout::Words));
    let shl = <tensorbits::ops::BitShiftLeft as Op>::INFO;
    assert!(!shl.gpu_kernels().iter().any(|k| k.layout == Layout::Words));
    // Pairwise sums of width-agnostic counts also run on rows' 32-bit words, for every type.
    let cdist = <tensorbits::ops::HammingCdist as Op>::INFO;
    for &t in cdist.all_types() {
        for layout in [Layout::PairWords, Layout::KnnWords] {
            assert!(
                cdist
                    .gpu_kernels()
                    .iter()
                    .any(|k| k.input == t && k.layout == layout),
                "HAMMING_CDIST: no {layout:?} kernel for {t}"
            );
        }
    }
}

/// The shaders that serve every op and type alike: the padding of valid bits, and `binarize`.
#[test]
fn shared_shaders_validate_with_naga() {
    use tensorbits::__private::{binarize_shader, pad_shader};
    for (name, source) in [("pad", pad_shader()), ("binarize", binarize_shader())] {
        let module = naga::front::wgsl::parse_str(&source)
            .unwrap_or_else(|e| panic!("{name}: {}\n{}", e.emit_to_string(&source), source));
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::empty(),
        )
        .validate(&module)
        .unwrap_or_else(|e| panic!("{name}: {}\n{}", e.emit_to_string(&source), source));
    }
}
