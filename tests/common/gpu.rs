//! The GPU for tests: created once; when none exists the tests print a notice and pass, unless
//! `TENSORBITS_REQUIRE_GPU=1`, which makes a missing GPU a failure (CI sets it, with lavapipe).

use std::sync::OnceLock;
use tensorbits::{GpuExecutor, GpuLimits};

fn require() -> bool {
    std::env::var("TENSORBITS_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

fn make(options: GpuLimits, what: &str) -> Option<GpuExecutor> {
    match pollster::block_on(GpuExecutor::with_limits(options)) {
        Ok(g) => {
            eprintln!("GPU tests ({what}) run on {}", g.describe());
            Some(g)
        }
        Err(e) if require() => panic!("TENSORBITS_REQUIRE_GPU=1 but no GPU could be had: {e}"),
        Err(e) => {
            eprintln!("notice: GPU tests ({what}) skipped, no GPU adapter: {e}");
            None
        }
    }
}

/// The default device, or `None` (with a printed notice) when there is none.
pub fn gpu() -> Option<&'static GpuExecutor> {
    static GPU: OnceLock<Option<GpuExecutor>> = OnceLock::new();
    GPU.get_or_init(|| make(GpuLimits::default(), "default limits"))
        .as_ref()
}

/// A device with tiny limits, so that splitting into several dispatches is exercised.
pub fn small_gpu() -> Option<&'static GpuExecutor> {
    static GPU: OnceLock<Option<GpuExecutor>> = OnceLock::new();
    GPU.get_or_init(|| {
        make(
            GpuLimits {
                max_storage_buffer_binding_size: Some(4096),
                max_compute_workgroups_per_dimension: Some(4),
            },
            "lowered limits",
        )
    })
    .as_ref()
}
