//! Compiled calls: validated once, then executed many times with only per-call checks.

use tensorbits::ops::{BitCount, BitXor};
use tensorbits::{
    Broadcast, Call, DataType, Error, FeatureLevel, Input, InputBuffer, Op, TensorDesc, compile,
    execute,
};

fn desc(dt: DataType, s: &[usize]) -> TensorDesc {
    TensorDesc::new(dt, s).unwrap()
}

/// `e` is the error of a buffer of `len` bytes where `required` are needed.
fn assert_too_small(e: &Error, len: usize, required: usize) {
    assert!(
        matches!(e, Error::BufferTooSmall { len: l, required: r, .. } if (*l, *r) == (len, required)),
        "{e}"
    );
}

#[test]
fn compiled_calls_give_what_execute_gives() {
    let xor = <BitXor as Op>::INFO;
    let call = Call {
        level: FeatureLevel::EXT,
        broadcast: Some(Broadcast::Numpy),
        ..Default::default()
    };
    let (a, b, o) = (
        desc(DataType::U16, &[3, 4]),
        desc(DataType::U16, &[4]),
        desc(DataType::U16, &[3, 4]),
    );
    let c = compile(xor, &call, &[&a, &b], &o).unwrap();
    assert_eq!(c.plan().output_shape(), &[3, 4]);
    for round in 0..3u8 {
        let da: Vec<u8> = (0..24).map(|i| i * 7 + round).collect();
        let db: Vec<u8> = (0..8).map(|i| i ^ round).collect();
        let mut want = vec![0u8; 24];
        execute(
            xor,
            &call,
            &[Input::Bytes(&a, &da), Input::Bytes(&b, &db)],
            &o,
            &mut want,
        )
        .unwrap();
        let mut got = vec![0u8; 24];
        c.execute(
            &[InputBuffer::Bytes(&da), InputBuffer::Bytes(&db)],
            &mut got,
        )
        .unwrap();
        assert_eq!(got, want);
    }
    // Typed, and in place on `a`.
    let mut x = vec![1u16, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
    let y = [0x100u16, 0x200, 0x300, 0x400];
    let mut out = vec![0u16; 12];
    c.execute_typed(&[&x, &y], &mut out).unwrap();
    assert_eq!(out[5], 6 ^ 0x200);
    c.execute(
        &[
            InputBuffer::Output,
            InputBuffer::Bytes(bytemuck::cast_slice(&y)),
        ],
        bytemuck::cast_slice_mut(&mut x),
    )
    .unwrap();
    assert_eq!(x, out);
}

#[test]
fn per_call_checks() {
    let xor = <BitXor as Op>::INFO;
    let d = desc(DataType::U32, &[4]);
    let c = compile(xor, &Call::default(), &[&d, &d], &d).unwrap();
    let mut out = vec![0x77u8; 16];
    let e = c
        .execute(&[InputBuffer::Bytes(&[0; 16])], &mut out)
        .unwrap_err();
    assert!(matches!(e, Error::InputCount { .. }), "{e}");
    let e = c
        .execute(
            &[InputBuffer::Bytes(&[0; 16]), InputBuffer::Bytes(&[0; 12])],
            &mut out,
        )
        .unwrap_err();
    assert_too_small(&e, 12, 16);
    let e = c
        .execute(
            &[InputBuffer::Bytes(&[0; 16]), InputBuffer::Bytes(&[0; 16])],
            &mut out[..8],
        )
        .unwrap_err();
    assert!(matches!(e, Error::BufferTooSmall { .. }), "{e}");
    let e = c
        .execute_typed(&[&[0i32; 4][..], &[0i32; 4][..]], &mut [0i32; 4])
        .unwrap_err();
    assert!(e.to_string().contains("i32"), "{e}");
    assert_eq!(out, vec![0x77u8; 16], "failed calls write nothing");
    // Counts never run in place; descriptions are validated at compile time.
    let count = <BitCount as Op>::INFO;
    let u8d = desc(DataType::U8, &[4]);
    let c = compile(count, &Call::default(), &[&u8d], &u8d).unwrap();
    assert!(matches!(
        c.execute(&[InputBuffer::Output], &mut [0u8; 4])
            .unwrap_err(),
        Error::InPlaceNotAllowed { .. }
    ));
    assert!(compile(count, &Call::default(), &[&u8d], &desc(DataType::I64, &[4])).is_err());
}

#[test]
fn promised_alignment_and_input_count_are_checked_per_call() {
    let xor = <BitXor as Op>::INFO;
    let d = desc(DataType::U32, &[4]).with_alignment(16);
    let c = compile(xor, &Call::default(), &[&d, &d], &d).unwrap();
    let buf = vec![0u128; 3];
    let bytes: &[u8] = bytemuck::cast_slice(&buf);
    let mut out = vec![0u128; 2];
    let out_bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
    let e = c
        .execute(
            &[
                InputBuffer::Bytes(&bytes[..16]),
                InputBuffer::Bytes(&bytes[4..20]),
            ],
            &mut out_bytes[..16],
        )
        .unwrap_err();
    assert!(
        matches!(e, Error::MisalignedOffset { alignment: 16, .. }),
        "{e}"
    );
    let e = c
        .execute(
            &[
                InputBuffer::Bytes(&bytes[..16]),
                InputBuffer::Bytes(&bytes[16..32]),
            ],
            &mut out_bytes[4..20],
        )
        .unwrap_err();
    assert!(
        matches!(e, Error::MisalignedOffset { alignment: 16, .. }),
        "{e}"
    );
    c.execute(
        &[
            InputBuffer::Bytes(&bytes[..16]),
            InputBuffer::Bytes(&bytes[16..32]),
        ],
        &mut out_bytes[16..32],
    )
    .unwrap();
    // More slices than inputs is an error, not a silently ignored tail.
    let x = [1u32; 4];
    let many: Vec<&[u32]> = vec![&x; 9];
    let e = c.execute_typed(&many, &mut [0u32; 4]).unwrap_err();
    assert!(matches!(e, Error::InputCount { got: 9, .. }), "{e}");
    assert!(matches!(
        c.execute_new::<u32, u32>(&many[..1]).unwrap_err(),
        Error::InputCount { got: 1, .. }
    ));
}

#[test]
fn execute_new_allocates_the_output() {
    let xor = <BitXor as Op>::INFO;
    // Three u16 elements; DirectML rounds `TotalTensorSizeInBytes` up to 4 bytes, so buffers hold
    // four, and the new output covers all of it.
    let a = [0x0f0fu16, 0xff00, 0x1234, 0xaaaa];
    let b = [0x00ffu16, 0x0ff0, 0xffff, 0x5555];
    let want: Vec<u16> = a.iter().zip(&b).map(|(x, y)| x ^ y).take(3).collect();
    let d = desc(DataType::U16, &[3]);
    let c = compile(xor, &Call::default(), &[&d, &d], &d).unwrap();
    let got = c.execute_new::<u16, u16>(&[&a, &b]).unwrap();
    assert_eq!(got, vec![want[0], want[1], want[2], 0]);
    // A strided output: elements every other slot, zeros between them.
    let o = desc(DataType::U16, &[3]).with_strides(&[2]).unwrap();
    let c = compile(xor, &Call::default(), &[&d, &d], &o).unwrap();
    let got = c.execute_new::<u16, u16>(&[&a, &b]).unwrap();
    assert_eq!(got, vec![want[0], 0, want[1], 0, want[2], 0]);
    // The compiled types are required.
    assert!(c.execute_new::<i16, i16>(&[&[1i16; 4], &[1; 4]]).is_err());
    let count = <BitCount as Op>::INFO;
    let c = compile(count, &Call::default(), &[&d], &desc(DataType::U8, &[3])).unwrap();
    assert_eq!(c.execute_new::<u16, u8>(&[&a]).unwrap(), vec![8, 8, 5, 0]);
}

/// Typed calls of one or two inputs on small packed tensors take a shortcut to the kernel; it
/// checks what `execute` checks (lengths, promised alignment) and gives the same bits.
#[test]
fn typed_small_calls_check_and_compute_as_execute_does() {
    let xor = <BitXor as Op>::INFO;
    let count = <BitCount as Op>::INFO;
    for n in [1usize, 7, 64, 1000] {
        let d = desc(DataType::U32, &[n]);
        let x: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(0x9e37_79b9)).collect();
        let y: Vec<u32> = (0..n as u32).map(|i| i ^ 0x5a5a_0f0f).collect();
        let c = compile(xor, &Call::default(), &[&d, &d], &d).unwrap();
        let mut typed = vec![0u32; n];
        c.execute_typed(&[&x, &y], &mut typed).unwrap();
        let mut bytes = vec![0u8; 4 * n];
        c.execute(
            &[
                InputBuffer::Bytes(bytemuck::cast_slice(&x)),
                InputBuffer::Bytes(bytemuck::cast_slice(&y)),
            ],
            &mut bytes,
        )
        .unwrap();
        let want: Vec<u32> = x.iter().zip(&y).map(|(a, b)| a ^ b).collect();
        assert_eq!(typed, want, "{n} elements, typed");
        assert_eq!(bytemuck::cast_slice::<u8, u32>(&bytes), &want[..]);
        // One input, another output type; longer buffers are read only as far as the description.
        let o = desc(DataType::U8, &[n]);
        let c = compile(count, &Call::default(), &[&d], &o).unwrap();
        let mut counts = vec![0xeeu8; n + 3];
        c.execute_typed(&[&x], &mut counts).unwrap();
        let want: Vec<u8> = x.iter().map(|v| v.count_ones() as u8).collect();
        assert_eq!(&counts[..n], &want[..], "{n} elements, counts");
        assert_eq!(&counts[n..], &[0xee; 3], "past the output");
    }
    // Failures of the shortcut's checks are the buffer check's errors, with nothing written.
    let d = desc(DataType::U32, &[4]).with_alignment(16);
    let c = compile(xor, &Call::default(), &[&d, &d], &d).unwrap();
    let buf = [
        0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10u128,
        0x1111_2222_3333_4444_5555_6666_7777_8888,
        0xf0f0_0f0f_ff00_00ff_1234_5678_9abc_def0,
    ];
    let words: &[u32] = bytemuck::cast_slice(&buf);
    let mut out = [0u128; 2];
    let o: &mut [u32] = bytemuck::cast_slice_mut(&mut out);
    let e = c
        .execute_typed(&[&words[..4], &words[1..5]], &mut o[..4])
        .unwrap_err();
    assert!(
        matches!(e, Error::MisalignedOffset { alignment: 16, .. }),
        "{e}"
    );
    let e = c
        .execute_typed(&[&words[..4], &words[4..8]], &mut o[1..5])
        .unwrap_err();
    assert!(
        matches!(e, Error::MisalignedOffset { alignment: 16, .. }),
        "{e}"
    );
    let e = c
        .execute_typed(&[&words[..4], &words[4..7]], &mut o[..4])
        .unwrap_err();
    assert_too_small(&e, 12, 16);
    let e = c
        .execute_typed(&[&words[..4], &words[4..8]], &mut o[..3])
        .unwrap_err();
    assert!(matches!(e, Error::BufferTooSmall { .. }), "{e}");
    assert_eq!(out, [0u128; 2], "failed calls write nothing");
    let o: &mut [u32] = bytemuck::cast_slice_mut(&mut out);
    c.execute_typed(&[&words[..4], &words[8..12]], &mut o[4..8])
        .unwrap();
    assert_eq!(out, [0, buf[0] ^ buf[2]]);
}
