//! This host's GPUs as TensorFlow lists them, and how long finding them took:
//! `cargo run --release -p cluster-resolver --example gpus`.
//!
//! The answer comes from NVML when `libnvidia-ml.so.1` loads, else from `nvidia-smi` on
//! `PATH`; a host without either has none. `CUDA_VISIBLE_DEVICES` is applied as CUDA does.

use std::time::Instant;

use cluster_resolver::gpus::{self, GpuSource};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), gpus::Error> {
    let started = Instant::now();
    let count = gpus::count(gpus::host()).await?;
    let counted = started.elapsed();
    let found = gpus::gpus(gpus::host()).await?;
    let listed = started.elapsed();
    let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
    println!(
        "{} GPUs counted by {} in {counted:?}; listed in {listed:?}",
        count.gpus, count.origin
    );
    for gpu in gpus::visible(&found, visible.as_deref()) {
        println!(
            "/device:GPU:{} memory_limit: {} bus_id: {} physical_device_desc: {:?}",
            gpu.id, gpu.memory_limit, gpu.bus_id, gpu.physical_device_desc
        );
    }
    // Asked again: the kept answer.
    let again = Instant::now();
    gpus::host().gpus()?;
    println!("asked again in {:?}", again.elapsed());
    Ok(())
}
