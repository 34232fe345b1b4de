//! A job's memory while it trains: each agent's resident memory (VmRSS) and its private part
//! (RssAnon), each task's, and each warm interpreter's that an agent holds for its next round
//! (a child of the agent that is not one of the round's tasks).

use super::job::{HOSTS, Job};
use super::marks::What;
use crate::child::status_mb;
use crate::proc_stat;

/// Resident memory in MB: of each agent, each task of the round, each warm interpreter.
#[derive(Clone, Debug, Default)]
pub(super) struct Memory {
    pub(super) agents_mb: Vec<f64>,
    /// Each agent's private memory: the rest of its VmRSS is the binary's and libraries'
    /// pages, shared by every process of the host that maps them.
    pub(super) agents_private_mb: Vec<f64>,
    pub(super) tasks_mb: Vec<f64>,
    pub(super) warm_mb: Vec<f64>,
}

impl Memory {
    /// `job`'s, training in round `round`; a process gone meanwhile is left out.
    pub(super) fn of(job: &Job, round: u32) -> Self {
        let agents: Vec<u32> = (0..HOSTS).filter_map(|h| job.agent_pid(h)).collect();
        let tasks: Vec<u32> = job
            .marks()
            .iter()
            .filter(|m| m.round == round && m.what == What::Start)
            .filter_map(|m| u32::try_from(m.value).ok())
            .collect();
        let warm: Vec<u32> = proc_stat::running()
            .filter(|p| agents.contains(&p.parent) && !tasks.contains(&p.pid))
            .map(|p| p.pid)
            .collect();
        let mb = |pids: &[u32], field: &str| {
            pids.iter()
                .filter_map(|&pid| status_mb(pid, field).ok())
                .collect()
        };
        Self {
            agents_mb: mb(&agents, "VmRSS"),
            agents_private_mb: mb(&agents, "RssAnon"),
            tasks_mb: mb(&tasks, "VmRSS"),
            warm_mb: mb(&warm, "VmRSS"),
        }
    }
}
