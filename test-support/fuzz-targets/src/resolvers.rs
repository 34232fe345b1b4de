//! The resolvers that read environment variables, each with the fuzzed input as one variable.

use cluster_resolver::{
    ClusterResolver, Env, SageMakerClusterResolver, SlurmClusterResolver, TfConfigClusterResolver,
};

use crate::block_on::block_on;

/// `TfConfigClusterResolver::cluster_spec` with `TF_CONFIG` set to the input.
pub fn tf_config(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        let resolver = TfConfigClusterResolver::new(Env::from_iter([("TF_CONFIG", s)]));
        let _ = block_on(resolver.cluster_spec());
    }
}

/// `SageMakerClusterResolver::cluster_spec` with `SM_HOSTS` set to the input.
pub fn sm_hosts(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        let env = Env::from_iter([("SM_HOSTS", s), ("SM_CURRENT_HOST", "algo-1")]);
        let _ = block_on(SageMakerClusterResolver::new(env).cluster_spec());
    }
}

/// `SlurmClusterResolver` on a complete Slurm step (rank 3 of `srun -N3 -n5`) with
/// `CUDA_VISIBLE_DEVICES` set to the input. The variable is always set, so nvidia-smi never runs.
pub fn gpu_list(data: &[u8]) {
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
}
