//! A framework that owns its wgpu device, queue, buffers and command encoder runs tensorbits ops on
//! regions of its own buffer, dispatching by op name and data type as a runtime would, and recording
//! into its own encoder.
//!
//! Prints (when a GPU adapter exists; otherwise a notice):
//! ```text
//! adapter: llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan)
//! BitwiseXor on u16 at FL_4_1: native? false (8- and 16-bit elements are packed in u32 words)
//! a ^ b (numpy broadcast of a [2, 3] with b [3]) = [0x00f1, 0x00f2, 0x00f3, 0x00f4, 0x00f5, 0x00f6]
//! then NOT in place                            = [0xff0e, 0xff0d, 0xff0c, 0xff0b, 0xff0a, 0xff09]
//! bytes around the output untouched: true
//! ```

use tensorbits::wgpu;
use tensorbits::{
    Broadcast, Call, DataType, FeatureLevel, GpuExecutor, GpuInput, GpuRegion, GpuTypeSupport,
    TensorDesc, ops,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The framework's own device.
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let Ok(adapter) = pollster::block_on(instance.request_adapter(&Default::default())) else {
        println!(
            "no GPU adapter: nothing to embed into (install a Vulkan driver, e.g. Mesa's lavapipe)"
        );
        return Ok(());
    };
    let info = adapter.get_info();
    println!("adapter: {} ({:?})", info.name, info.backend);
    let (device, queue) = pollster::block_on(adapter.request_device(&Default::default()))?;

    // One arena buffer: a (2x3 u16) at byte 0, b (3 u16) at byte 16, the output at byte 34, which is
    // not a multiple of 4, with marker bytes around it.
    let mut bytes = vec![0xEEu8; 64];
    for (i, v) in [1u16, 2, 3, 4, 5, 6].iter().enumerate() {
        bytes[2 * i..2 * i + 2].copy_from_slice(&v.to_le_bytes());
    }
    for (i, v) in [0xf0u16, 0xf0, 0xf0].iter().enumerate() {
        bytes[16 + 2 * i..18 + 2 * i].copy_from_slice(&v.to_le_bytes());
    }
    let arena = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("framework arena"),
        size: 64,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    queue.write_buffer(&arena, 0, &bytes);

    // tensorbits on the framework's device; ops found by name, types known only at run time.
    let gpu = GpuExecutor::from_device(device.clone(), queue.clone());
    let xor = ops::find("BitwiseXor").ok_or("no such op")?;
    let not = ops::find("bitwise_not").ok_or("no such op")?;
    let native = gpu
        .capabilities(xor, FeatureLevel::FL_4_1)
        .iter()
        .any(|&(t, s)| t == DataType::U16 && s == GpuTypeSupport::Native);
    println!(
        "BitwiseXor on u16 at FL_4_1: native? {native} (8- and 16-bit elements are packed in u32 words)"
    );

    let a = GpuRegion {
        buffer: &arena,
        offset: 0,
        desc: TensorDesc::new(DataType::U16, &[2, 3])?,
    };
    let b = GpuRegion {
        buffer: &arena,
        offset: 16,
        desc: TensorDesc::new(DataType::U16, &[3])?,
    };
    let out = GpuRegion {
        buffer: &arena,
        offset: 34,
        desc: TensorDesc::new(DataType::U16, &[2, 3])?,
    };
    let call = Call {
        level: FeatureLevel::FL_4_1,
        broadcast: Some(Broadcast::Numpy),
        ..Default::default()
    };

    // Both ops recorded into the framework's encoder; the framework submits.
    let mut enc = device.create_command_encoder(&Default::default());
    gpu.execute(
        xor,
        &call,
        &[GpuInput::Region(a), GpuInput::Region(b)],
        &out,
        Some(&mut enc),
    )?;
    // A snapshot of the arena between the two ops, copied on the device.
    let snapshot = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("snapshot"),
        size: 64,
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    enc.copy_buffer_to_buffer(&arena, 0, &snapshot, 0, 64);
    gpu.execute(not, &call, &[GpuInput::Output], &out, Some(&mut enc))?;
    queue.submit([enc.finish()]);

    let words = |b: &[u8]| -> Vec<String> {
        b[34..46]
            .chunks(2)
            .map(|c| format!("{:#06x}", u16::from_le_bytes([c[0], c[1]])))
            .collect()
    };
    let after = gpu.read_bytes(&arena, 0, 64)?;
    let first = gpu.read_bytes(&snapshot, 0, 64)?;
    println!(
        "a ^ b (numpy broadcast of a [2, 3] with b [3]) = [{}]",
        words(&first).join(", ")
    );
    println!(
        "then NOT in place                            = [{}]",
        words(&after).join(", ")
    );
    let untouched = after[22..34].iter().chain(&after[46..]).all(|&x| x == 0xEE);
    println!("bytes around the output untouched: {untouched}");
    Ok(())
}
