//! One test per validation rule: each asserts the typed error and the words of its message. The typed
//! API and the dynamic one share the validator; `typed_and_dynamic_agree` checks that directly.

use tensorbits::ops::{BitCount, BitNot, BitShiftLeft, BitXor};
use tensorbits::{
    Broadcast, Call, DataType, Error, FeatureLevel, Input, Op, OpInfo, Options, Region, Tensor,
    TensorDesc, TensorView, TensorViewMut, bitwise_op, execute, execute_in_buffer,
};

/// Accepts ranks 1 to 2, numpy broadcasting only, in place only on `a`.
#[bitwise_op(
    name = "NARROW",
    inputs = [a, b],
    compute = a & b,
    dims = 1..=2,
    broadcast = [numpy],
    in_place = [a],
    support(FL_3_0 = [u8], EXT = [u8, u32]),
)]
struct Narrow;

fn xor() -> &'static OpInfo {
    <BitXor as Op>::INFO
}

fn desc(dt: DataType, sizes: &[usize]) -> TensorDesc {
    TensorDesc::new(dt, sizes).unwrap()
}

/// Runs a binary op through the dynamic API on zeroed buffers of the descriptions' sizes.
fn run2(
    op: &OpInfo,
    call: Call,
    a: TensorDesc,
    b: TensorDesc,
    out: TensorDesc,
) -> Result<(), Error> {
    let (da, db) = (vec![0u8; a.total_bytes()], vec![0u8; b.total_bytes()]);
    let mut o = vec![0u8; out.total_bytes()];
    execute(
        op,
        &call,
        &[Input::Bytes(&a, &da), Input::Bytes(&b, &db)],
        &out,
        &mut o,
    )
}

fn at(level: FeatureLevel) -> Call {
    Call {
        level,
        broadcast: None,
        ..Default::default()
    }
}

fn msg(r: Result<(), Error>) -> (Error, String) {
    let e = r.expect_err("the call must be rejected");
    let m = e.to_string();
    (e, m)
}

#[test]
fn unknown_op() {
    let e = tensorbits::ops::lookup("bitwise_nand").unwrap_err();
    assert!(matches!(e, Error::UnknownOp { .. }));
    assert!(
        e.to_string().contains("unknown op `bitwise_nand`") && e.to_string().contains("xor"),
        "{e}"
    );
    for name in [
        "XOR",
        "ELEMENT_WISE_BIT_XOR",
        "DML_ELEMENT_WISE_BIT_XOR_OPERATOR_DESC",
        "BitwiseXor",
        "bitwise_xor",
        "BitXor",
    ] {
        assert_eq!(
            tensorbits::ops::find(name).map(|o| o.name()),
            Some("ELEMENT_WISE_BIT_XOR"),
            "{name}"
        );
    }
    assert_eq!(
        tensorbits::ops::find("invert").map(|o| o.name()),
        Some("ELEMENT_WISE_BIT_NOT")
    );
    assert_eq!(
        tensorbits::ops::find("bitwise_count").map(|o| o.name()),
        Some("ELEMENT_WISE_BIT_COUNT")
    );
    assert_eq!(
        tensorbits::ops::find("BitwiseLeftShift").map(|o| o.name()),
        Some("ELEMENT_WISE_BIT_SHIFT_LEFT")
    );
    assert_eq!(
        tensorbits::ops::find_with_direction("BitShift", Some("right")).map(|o| o.name()),
        Some("ELEMENT_WISE_BIT_SHIFT_RIGHT")
    );
    assert!(tensorbits::ops::find_with_direction("BitShift", None).is_none());
}

#[test]
fn input_count() {
    let d = desc(DataType::U8, &[2]);
    let mut o = vec![0u8; 4];
    let (e, m) = msg(execute(
        xor(),
        &Call::default(),
        &[Input::Bytes(&d, &[0; 4])],
        &d,
        &mut o,
    ));
    assert!(matches!(
        e,
        Error::InputCount {
            expected: 2,
            got: 1,
            ..
        }
    ));
    assert!(m.contains("takes 2 input tensor(s) (a, b), got 1"), "{m}");
}

#[test]
fn op_not_available_below_its_level() {
    let d = desc(DataType::U8, &[2]);
    let (e, m) = msg(run2(xor(), at(FeatureLevel::FL_2_1), d, d, d));
    assert!(matches!(e, Error::OpNotAvailable { .. }));
    assert!(
        m.contains("not available at FL_2_1: it was introduced in FL_3_0"),
        "{m}"
    );
}

#[test]
fn unsupported_data_type_at_level() {
    let d = desc(DataType::F32, &[2]);
    let (e, m) = msg(run2(xor(), at(FeatureLevel::FL_3_0), d, d, d));
    assert!(matches!(
        e,
        Error::UnsupportedDataType {
            dtype: DataType::F32,
            level: FeatureLevel::FL_3_0,
            ..
        }
    ));
    assert!(
        m.contains("does not support f32 (ATensor) at FL_3_0; supported at FL_3_0: u32, u16, u8"),
        "{m}"
    );
    // bool shifts exist at no level.
    let d = desc(DataType::Bool, &[2]);
    let (_, m) = msg(run2(<BitShiftLeft as Op>::INFO, Call::default(), d, d, d));
    assert!(m.contains("does not support bool"), "{m}");
}

#[test]
fn inputs_must_share_a_data_type() {
    let (a, b) = (desc(DataType::U8, &[2]), desc(DataType::I8, &[2]));
    let (e, m) = msg(run2(xor(), Call::default(), a, b, a));
    assert!(matches!(e, Error::DataTypeMismatch { .. }));
    assert!(
        m.contains(
            "BTensor has data type i8, but all inputs must have the data type of ATensor, u8"
        ),
        "{m}"
    );
}

#[test]
fn output_data_type() {
    let a = desc(DataType::U8, &[2]);
    let (e, m) = msg(run2(
        xor(),
        Call::default(),
        a,
        a,
        desc(DataType::U16, &[2]),
    ));
    assert!(matches!(e, Error::OutputDataType { .. }));
    assert!(
        m.contains("OutputTensor has data type u16, expected u8, the input type"),
        "{m}"
    );
    let mut o = vec![0u8; 16];
    let r = execute(
        <BitCount as Op>::INFO,
        &Call::default(),
        &[Input::Bytes(&a, &[0; 4])],
        &desc(DataType::I64, &[2]),
        &mut o,
    );
    let (_, m) = msg(r);
    assert!(m.contains("expected one of u8, u32"), "{m}");
}

#[test]
fn rank_too_large() {
    let e = TensorDesc::new(DataType::U8, &[1; 9]).unwrap_err();
    assert!(matches!(e, Error::RankTooLarge { rank: 9, .. }));
    assert!(
        e.to_string()
            .contains("has 9 dimensions; at most 8 are supported"),
        "{e}"
    );
    let e = Tensor::from_vec(vec![0u8], &[1; 9]).unwrap_err();
    assert!(matches!(e, Error::RankTooLarge { .. }));
}

#[test]
fn rank_outside_the_ops_range() {
    let op = <Narrow as Op>::INFO;
    let d3 = desc(DataType::U8, &[1, 1, 2]);
    let (e, m) = msg(run2(op, Call::default(), d3, d3, d3));
    assert!(matches!(
        e,
        Error::RankNotSupported {
            rank: 3,
            min: 1,
            max: 2,
            ..
        }
    ));
    assert!(
        m.contains("NARROW: ATensor has 3 dimensions; NARROW accepts 1 to 2"),
        "{m}"
    );
    // The typed methods' shortcut for packed same-shape tensors gives the same error.
    let t = Tensor::from_vec(vec![1u8, 2], &[1, 1, 2]).unwrap();
    let e = Narrow::run(&t, &t).unwrap_err();
    assert_eq!(e.to_string(), m);
    let mut out = t.clone();
    let e = Narrow::run_into(&Options::new(), &t, &t, &mut out).unwrap_err();
    assert_eq!(e.to_string(), m);
    assert_eq!(out, t, "a failed call writes nothing");
}

#[test]
fn strides_length() {
    let e = desc(DataType::U8, &[2, 2]).with_strides(&[1]).unwrap_err();
    assert!(matches!(
        e,
        Error::StridesLength {
            strides: 1,
            rank: 2,
            ..
        }
    ));
    assert!(
        e.to_string().contains("has 1 strides for 2 dimensions"),
        "{e}"
    );
}

#[test]
fn zero_output_stride() {
    let a = desc(DataType::U8, &[2]);
    let out = desc(DataType::U8, &[2]).with_strides(&[0]).unwrap();
    let (e, m) = msg(run2(xor(), Call::default(), a, a, out));
    assert!(matches!(e, Error::ZeroOutputStride { dim: 0 }));
    assert!(
        m.contains("OutputTensor has stride 0 in dimension 0"),
        "{m}"
    );
    let mut buf = [0u8; 4];
    assert!(matches!(
        TensorViewMut::with_strides(&mut buf, &[2], &[0]),
        Err(Error::ZeroOutputStride { .. })
    ));
}

#[test]
fn self_overlapping_output() {
    let a = desc(DataType::U8, &[3, 3]);
    let out = desc(DataType::U8, &[3, 3]).with_strides(&[1, 1]).unwrap();
    let (e, m) = msg(run2(xor(), Call::default(), a, a, out));
    assert!(matches!(e, Error::SelfOverlappingOutput { .. }));
    assert!(
        m.contains("strides [1, 1] for sizes [3, 3] make elements overlap"),
        "{m}"
    );
}

#[test]
fn total_bytes_too_small() {
    let small = desc(DataType::U32, &[3]).with_total_bytes(8);
    let ok = desc(DataType::U32, &[3]);
    let (e, m) = msg(run2(xor(), Call::default(), ok, small, ok));
    assert!(matches!(
        e,
        Error::TotalBytesTooSmall {
            total: 8,
            required: 12,
            ..
        }
    ));
    assert!(
        m.contains("BTensor: total size of 8 bytes is too small"),
        "{m}"
    );
    // DirectML rounds up to 4: one u8 needs 4 bytes.
    let one = desc(DataType::U8, &[1]);
    assert_eq!(one.total_bytes(), 4);
    let (_, m) = msg(run2(
        xor(),
        Call::default(),
        one.with_total_bytes(1),
        one,
        one,
    ));
    assert!(m.contains("need at least 4"), "{m}");
}

#[test]
fn bad_alignment() {
    let d = desc(DataType::U32, &[2]);
    let (e, m) = msg(run2(xor(), Call::default(), d.with_alignment(3), d, d));
    assert!(matches!(
        e,
        Error::BadAlignment {
            alignment: 3,
            elem: 4,
            ..
        }
    ));
    assert!(
        m.contains("alignment 3 must be a power of two and at least the element size 4"),
        "{m}"
    );
    let (_, m) = msg(run2(xor(), Call::default(), d, d.with_alignment(2), d));
    assert!(m.contains("BTensor"), "{m}");
}

#[test]
fn size_overflow() {
    let e = TensorDesc::new(DataType::U64, &[usize::MAX / 2, 4]).unwrap_err();
    assert!(matches!(e, Error::SizeOverflow { .. }));
    assert!(e.to_string().contains("overflow the address space"), "{e}");
    let e = desc(DataType::U8, &[2, 2])
        .with_strides(&[usize::MAX, 1])
        .unwrap_err();
    assert!(matches!(e, Error::SizeOverflow { .. }));
}

#[test]
fn buffer_too_small() {
    let d = desc(DataType::U32, &[4]);
    let mut o = vec![0u8; 16];
    let r = execute(
        xor(),
        &Call::default(),
        &[Input::Bytes(&d, &[0; 16]), Input::Bytes(&d, &[0; 15])],
        &d,
        &mut o,
    );
    let (e, m) = msg(r);
    assert!(matches!(
        e,
        Error::BufferTooSmall {
            len: 15,
            required: 16,
            ..
        }
    ));
    assert!(
        m.contains("BTensor: buffer of 15 bytes is shorter than the 16 bytes its description's elements span"),
        "{m}"
    );
    let data = [0u8; 3];
    assert!(matches!(
        TensorView::new(&data, &[4]),
        Err(Error::BufferTooSmall { .. })
    ));
}

#[test]
fn misaligned_offset() {
    let d = desc(DataType::U32, &[1]).with_alignment(4);
    let mut buf = vec![0u8; 32];
    let r = execute_in_buffer(
        xor(),
        &Call::default(),
        &mut buf,
        &[Region { offset: 2, desc: d }, Region { offset: 8, desc: d }],
        &Region {
            offset: 16,
            desc: d,
        },
    );
    let (e, m) = msg(r);
    assert!(matches!(
        e,
        Error::MisalignedOffset {
            offset: 2,
            alignment: 4,
            ..
        }
    ));
    assert!(
        m.contains("ATensor: base offset 2 is not a multiple of the guaranteed alignment 4"),
        "{m}"
    );
}

#[test]
fn region_out_of_bounds() {
    let d = desc(DataType::U32, &[2]);
    let mut buf = vec![0u8; 20];
    let r = execute_in_buffer(
        xor(),
        &Call::default(),
        &mut buf,
        &[Region { offset: 0, desc: d }, Region { offset: 8, desc: d }],
        &Region {
            offset: 16,
            desc: d,
        },
    );
    let (e, m) = msg(r);
    assert!(matches!(
        e,
        Error::RegionOutOfBounds {
            offset: 16,
            end: 24,
            len: 20,
            ..
        }
    ));
    assert!(
        m.contains("OutputTensor: region [16, 24) lies outside the buffer of 20 bytes"),
        "{m}"
    );
}

#[test]
fn data_length() {
    let e = Tensor::from_vec(vec![1u8, 2, 3], &[2, 2]).unwrap_err();
    assert!(matches!(
        e,
        Error::DataLength {
            len: 3,
            expected: 4,
            ..
        }
    ));
    assert!(
        e.to_string()
            .contains("3 elements given, shape [2, 2] holds 4"),
        "{e}"
    );
}

#[test]
fn broadcast_mode_not_accepted() {
    let d = desc(DataType::U8, &[2]);
    let call = Call {
        level: FeatureLevel::EXT,
        broadcast: Some(Broadcast::None),
        ..Default::default()
    };
    let (e, m) = msg(run2(<Narrow as Op>::INFO, call, d, d, d));
    assert!(matches!(e, Error::BroadcastNotSupported { .. }));
    assert!(
        m.contains("NARROW does not accept broadcast mode `none`; it accepts: numpy"),
        "{m}"
    );
    let t = Tensor::from_vec(vec![1u8, 2], &[2]).unwrap();
    let opts = Options::new().broadcast(Broadcast::None);
    let e = Narrow::run_with(&opts, &t, &t).unwrap_err();
    assert_eq!(e.to_string(), m, "the typed shortcut's message");
}

#[test]
fn a_unary_op_takes_no_broadcast_mode_but_none() {
    let d = desc(DataType::U8, &[2]);
    let not = <BitNot as Op>::INFO;
    for (b, name) in [
        (Broadcast::Pdpd { axis: 0 }, "pdpd"),
        (Broadcast::PDPD, "pdpd"),
        (Broadcast::Numpy, "numpy"),
    ] {
        let call = Call {
            level: FeatureLevel::EXT,
            broadcast: Some(b),
            ..Default::default()
        };
        let mut out = vec![0u8; 4];
        let e = execute(not, &call, &[Input::Bytes(&d, &[1, 2, 0, 0])], &d, &mut out).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "ELEMENT_WISE_BIT_NOT does not accept broadcast mode `{name}`; it accepts: none"
            )
        );
        assert_eq!(out, [0; 4]);
        let t = Tensor::from_vec(vec![1u8, 2], &[2]).unwrap();
        let typed = BitNot::run_with(&Options::new().broadcast(b), &t).unwrap_err();
        assert_eq!(
            typed.to_string(),
            e.to_string(),
            "the typed shortcut's message"
        );
    }
    let call = Call {
        level: FeatureLevel::EXT,
        broadcast: Some(Broadcast::None),
        ..Default::default()
    };
    let mut out = vec![0u8; 4];
    execute(not, &call, &[Input::Bytes(&d, &[1, 2, 0, 0])], &d, &mut out).unwrap();
    assert_eq!(out[..2], [254, 253]);
}

#[test]
fn shapes_under_none() {
    let call = Call {
        level: FeatureLevel::EXT,
        broadcast: Some(Broadcast::None),
        ..Default::default()
    };
    let (e, m) = msg(run2(
        xor(),
        call,
        desc(DataType::U8, &[2, 3]),
        desc(DataType::U8, &[2, 4]),
        desc(DataType::U8, &[2, 3]),
    ));
    assert!(matches!(e, Error::ShapeMismatch { .. }));
    assert!(
        m.contains(
            "BTensor shape [2, 4] does not match ATensor shape [2, 3] in dimension 1 (4 vs 3"
        ),
        "{m}"
    );
    let (_, m) = msg(run2(
        xor(),
        call,
        desc(DataType::U8, &[2, 3]),
        desc(DataType::U8, &[3]),
        desc(DataType::U8, &[2, 3]),
    ));
    assert!(m.contains("rank 1 vs 2"), "{m}");
}

#[test]
fn shapes_under_numpy() {
    let call = Call {
        level: FeatureLevel::EXT,
        broadcast: Some(Broadcast::Numpy),
        ..Default::default()
    };
    let (e, m) = msg(run2(
        xor(),
        call,
        desc(DataType::U8, &[8, 1, 6, 1]),
        desc(DataType::U8, &[7, 2, 5]),
        desc(DataType::U8, &[8, 7, 6, 5]),
    ));
    assert!(matches!(e, Error::ShapeMismatch { .. }));
    assert!(m.contains("(numpy broadcast): BTensor shape [7, 2, 5] does not match ATensor shape [8, 1, 6, 1] in dimension 1 (size 2 vs 6"), "{m}");
}

#[test]
fn shapes_under_pdpd() {
    let call = Call {
        level: FeatureLevel::EXT,
        broadcast: Some(Broadcast::Pdpd { axis: 1 }),
        ..Default::default()
    };
    let ok = run2(
        xor(),
        call,
        desc(DataType::U8, &[2, 3, 4, 5]),
        desc(DataType::U8, &[3, 1]),
        desc(DataType::U8, &[2, 3, 4, 5]),
    );
    assert!(ok.is_ok(), "{ok:?}");
    let (e, m) = msg(run2(
        xor(),
        call,
        desc(DataType::U8, &[2, 3, 4, 5]),
        desc(DataType::U8, &[4, 4]),
        desc(DataType::U8, &[2, 3, 4, 5]),
    ));
    assert!(matches!(e, Error::ShapeMismatch { .. }));
    assert!(
        m.contains("in dimension 0 (size 4 vs size 3 of dimension 1 of ATensor"),
        "{m}"
    );
}

#[test]
fn pdpd_axis_out_of_range() {
    let call = Call {
        level: FeatureLevel::EXT,
        broadcast: Some(Broadcast::Pdpd { axis: 3 }),
        ..Default::default()
    };
    let (e, m) = msg(run2(
        xor(),
        call,
        desc(DataType::U8, &[2, 3, 4]),
        desc(DataType::U8, &[4, 5]),
        desc(DataType::U8, &[2, 3, 4]),
    ));
    assert!(matches!(e, Error::BadAxis { axis: 3, .. }));
    assert!(
        m.contains(
            "axis 3 is out of range for BTensor of rank 2 onto rank 3 (valid: -1 or 0 to 1)"
        ),
        "{m}"
    );
    let call = Call {
        level: FeatureLevel::EXT,
        broadcast: Some(Broadcast::Pdpd { axis: -2 }),
        ..Default::default()
    };
    let (e, _) = msg(run2(
        xor(),
        call,
        desc(DataType::U8, &[2, 3]),
        desc(DataType::U8, &[3]),
        desc(DataType::U8, &[2, 3]),
    ));
    assert!(matches!(e, Error::BadAxis { axis: -2, .. }));
}

#[test]
fn output_shape() {
    let a = desc(DataType::U8, &[2, 3]);
    let (e, m) = msg(run2(
        xor(),
        Call::default(),
        a,
        a,
        desc(DataType::U8, &[3, 2]),
    ));
    assert!(matches!(e, Error::OutputShape { .. }));
    assert!(
        m.contains("OutputTensor has shape [3, 2], but the inputs produce shape [2, 3]"),
        "{m}"
    );
}

#[test]
fn in_place_not_allowed() {
    let d = desc(DataType::U8, &[4]);
    let mut o = vec![0u8; 4];
    let r = execute(
        <Narrow as Op>::INFO,
        &Call::default(),
        &[Input::Bytes(&d, &[0; 4]), Input::Output],
        &d,
        &mut o,
    );
    let (e, m) = msg(r);
    assert!(matches!(e, Error::InPlaceNotAllowed { .. }));
    assert!(
        m.contains("OutputTensor may not alias BTensor; NARROW runs in place only on: ATensor"),
        "{m}"
    );
    // A bit count never runs in place.
    let r = execute(
        <BitCount as Op>::INFO,
        &Call::default(),
        &[Input::Output],
        &d,
        &mut o,
    );
    assert!(matches!(r, Err(Error::InPlaceNotAllowed { .. })));
}

#[test]
fn partial_overlap() {
    let d = desc(DataType::U32, &[4]);
    let mut buf = vec![0u8; 64];
    let r = execute_in_buffer(
        xor(),
        &Call::default(),
        &mut buf,
        &[
            Region { offset: 0, desc: d },
            Region {
                offset: 20,
                desc: d,
            },
        ],
        &Region {
            offset: 24,
            desc: d,
        },
    );
    let (e, m) = msg(r);
    assert!(matches!(
        e,
        Error::PartialOverlap {
            start: 20,
            end: 36,
            out_start: 24,
            out_end: 40,
            ..
        }
    ));
    assert!(
        m.contains("OutputTensor bytes [24, 40) partially overlap BTensor bytes [20, 36)"),
        "{m}"
    );
}

#[test]
fn exact_alias_in_a_shared_buffer_runs_in_place() {
    let d = desc(DataType::U16, &[3]);
    let mut buf: Vec<u8> = [1u16, 2, 3, 0xff00, 0xff00, 0xff00]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    buf.extend([0xAA; 2]);
    execute_in_buffer(
        xor(),
        &Call::default(),
        &mut buf,
        &[Region { offset: 0, desc: d }, Region { offset: 6, desc: d }],
        &Region { offset: 0, desc: d },
    )
    .unwrap();
    let words: Vec<u16> = buf[..6]
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    assert_eq!(words, [0xff01, 0xff02, 0xff03]);
    assert_eq!(
        &buf[12..],
        &[0xAA, 0xAA],
        "bytes past the tensors are untouched"
    );
}

#[test]
fn nothing_is_written_when_a_call_fails() {
    let a = desc(DataType::U8, &[4]);
    let mut o = vec![0x5Au8; 4];
    // The error is only found at the second input; the output must still be untouched.
    let r = execute(
        xor(),
        &Call::default(),
        &[Input::Bytes(&a, &[1; 4]), Input::Bytes(&a, &[1; 2])],
        &a,
        &mut o,
    );
    assert!(r.is_err());
    assert_eq!(o, [0x5A; 4]);
}

#[test]
fn unaligned_byte_buffers_are_read_correctly() {
    let d = desc(DataType::U32, &[2]);
    let mut raw = [0u8; 9];
    raw[1..9].copy_from_slice(&[1, 0, 0, 0, 2, 0, 0, 0]);
    let mut out = vec![0u8; 9];
    execute(
        xor(),
        &Call::default(),
        &[Input::Bytes(&d, &raw[1..]), Input::Bytes(&d, &raw[1..])],
        &d,
        &mut out[1..],
    )
    .unwrap();
    assert_eq!(out, [0; 9]);
    execute(
        <BitNot as Op>::INFO,
        &Call::default(),
        &[Input::Bytes(&d, &raw[1..])],
        &d,
        &mut out[1..],
    )
    .unwrap();
    assert_eq!(&out[1..5], &(!1u32).to_le_bytes());
}

#[test]
fn typed_and_dynamic_agree() {
    let a = Tensor::from_vec(vec![1u8, 2, 3], &[3]).unwrap();
    let b = Tensor::from_vec(vec![1u8, 2], &[2]).unwrap();
    let typed = BitXor::run(&a, &b).unwrap_err();
    let dynamic = run2(
        xor(),
        Call::default(),
        desc(DataType::U8, &[3]),
        desc(DataType::U8, &[2]),
        desc(DataType::U8, &[3]),
    )
    .unwrap_err();
    assert_eq!(typed, dynamic);
    let opts = Options::new().broadcast(Broadcast::Numpy);
    assert_eq!(BitXor::run_with(&opts, &a, &a).unwrap().data(), &[0, 0, 0]);
}

#[test]
fn slices_need_to_cover_the_elements_only() {
    // A description's total size rounds up to 4 bytes; a slice's length is exact, so 10 bytes of
    // u8 are enough for 10 elements, in and out.
    let d = desc(DataType::U8, &[10]);
    assert_eq!(d.total_bytes(), 12);
    let a: Vec<u8> = (0..10).collect();
    let b = [0x0fu8; 10];
    let mut o = [0u8; 10];
    execute(
        xor(),
        &Call::default(),
        &[Input::Bytes(&d, &a), Input::Bytes(&d, &b)],
        &d,
        &mut o,
    )
    .unwrap();
    assert_eq!(o.to_vec(), a.iter().map(|v| v ^ 0x0f).collect::<Vec<_>>());
    let e = execute(
        xor(),
        &Call::default(),
        &[Input::Bytes(&d, &a), Input::Bytes(&d, &b[..9])],
        &d,
        &mut o,
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            Error::BufferTooSmall {
                len: 9,
                required: 10,
                ..
            }
        ),
        "{e}"
    );
}
