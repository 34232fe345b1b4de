#![no_main]
//! `SlurmClusterResolver` on a complete Slurm step (rank 3 of `srun -N3 -n5`) with
//! `CUDA_VISIBLE_DEVICES` set to the input. The variable is always set, so nvidia-smi never runs.

use cluster_resolver::{ClusterResolver, Env, SlurmClusterResolver};
use libfuzzer_sys::fuzz_target;
use tfcluster_fuzz::block_on;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        let env = Env::from_iter([
            ("SLURM_PROCID", "3"),
            ("SLURM_STEP_NUM_TASKS", "5"),
            ("SLURM_STEP_NODELIST", "n[9-11]"),
            ("SLURM_STEP_TASKS_PER_NODE", "2(x2),1"),
            ("SLURMD_NODENAME", "n10"),
            ("CUDA_VISIBLE_DEVICES", s),
        ]);
        let resolver = SlurmClusterResolver::new(env);
        let _ = resolver.resolve();
        let _ = block_on(resolver.cluster_spec());
    }
});
