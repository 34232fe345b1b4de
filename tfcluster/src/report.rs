//! What `up` and `connect` print about a connected cluster: each task, its address and the
//! devices it may see, as a table with a visibility matrix, or as JSON.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use comfy_table::{CellAlignment, ContentArrangement, Table};
use remote_connect::{Context, TaskId};
use serde_json::json;

/// Output form of `up` and `connect`.
#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum Format {
    /// Readable: tasks, addresses, devices, and who sees what.
    Table,
    /// One JSON object: `{"context_id", "local": {...}, "tasks": [{"task", "job", "index",
    /// "address", "devices", "visible"}]}`.
    Json,
}

/// Devices above which the matrix is summarised per task (it would not fit a terminal).
const MATRIX_MAX_DEVICES: usize = 32;

pub(crate) fn render(ctx: &Context, format: Format) -> String {
    match format {
        Format::Json => format!("{}\n", json(ctx)),
        Format::Table => View::of(ctx).table(),
    }
}

/// The JSON form of the report.
pub(crate) fn json(ctx: &Context) -> serde_json::Value {
    View::of(ctx).to_json(ctx.context_id(), ctx.local_address())
}

/// One task's line of the report.
struct Row {
    task: TaskId,
    address: String,
    /// Its own devices.
    devices: Vec<String>,
    /// The devices it was given (its filters applied).
    visible: HashSet<String>,
    /// The same, in the order they were given.
    visible_list: Vec<String>,
}

/// The context read once: a cluster of 1,024 tasks is a million device names, so nothing is
/// asked of the context per task and device.
struct View {
    /// This process's devices (`/device:TYPE:ID`).
    local: Vec<String>,
    /// Every remote task's devices, in the context's order.
    remote: Vec<String>,
    rows: Vec<Row>,
}

impl View {
    fn of(ctx: &Context) -> Self {
        let (remote, local): (Vec<String>, Vec<String>) = ctx
            .list_logical_devices()
            .into_iter()
            .map(|d| d.name)
            .partition(|name| name.starts_with("/job:"));
        let mut by_task: HashMap<&str, Vec<String>> = HashMap::new();
        for name in &remote {
            let task = name.split("/device:").next().unwrap_or(name);
            by_task.entry(task).or_default().push(name.clone());
        }
        let rows = ctx
            .remote_tasks()
            .into_iter()
            .map(|(task, address)| {
                let visible_list = ctx.visible_devices(&task).unwrap_or_default();
                Row {
                    devices: by_task
                        .remove(task.to_string().as_str())
                        .unwrap_or_default(),
                    visible: visible_list.iter().cloned().collect(),
                    visible_list,
                    task,
                    address,
                }
            })
            .collect();
        Self {
            local,
            remote,
            rows,
        }
    }

    fn to_json(&self, context_id: u64, local_address: Option<String>) -> serde_json::Value {
        let tasks: Vec<_> = self
            .rows
            .iter()
            .map(|row| {
                json!({
                    "task": row.task.to_string(),
                    "job": row.task.job,
                    "index": row.task.task,
                    "address": row.address,
                    "devices": row.devices,
                    "visible": row.visible_list,
                })
            })
            .collect();
        json!({
            "context_id": context_id,
            "local": {"address": local_address, "devices": self.local},
            "tasks": tasks,
        })
    }

    fn table(&self) -> String {
        let mut listing = plain(["task", "address", "devices"]);
        for row in &self.rows {
            let devices: Vec<String> = row.devices.iter().map(|d| short(d, &row.task)).collect();
            listing.add_row([row.task.to_string(), row.address.clone(), devices.join(" ")]);
        }
        let mut out = format!("{listing}\n");
        // Who may see what: one column per device of the cluster.
        let all = &self.remote;
        let filtered = self
            .rows
            .iter()
            .any(|row| all.iter().any(|d| !row.visible.contains(d)));
        if !filtered {
            let _ = writeln!(
                out,
                "\nno device filters: every task sees all {} devices",
                all.len()
            );
            return out;
        }
        let _ = writeln!(out, "\nvisible devices (device filters):");
        if all.len() > MATRIX_MAX_DEVICES {
            let mut summary = plain(["task", "sees"]);
            for row in &self.rows {
                let count = all.iter().filter(|d| row.visible.contains(*d)).count();
                summary.add_row([
                    row.task.to_string(),
                    format!("{count} of {} devices", all.len()),
                ]);
            }
            let _ = writeln!(out, "{summary}");
            return out;
        }
        let header = std::iter::once(String::new()).chain(all.iter().map(|d| label(d)));
        let mut matrix = plain(header);
        for row in &self.rows {
            let marks = all.iter().map(|device| {
                if row.visible.contains(device) {
                    "x"
                } else {
                    "."
                }
                .to_owned()
            });
            matrix.add_row(std::iter::once(row.task.to_string()).chain(marks));
        }
        for column in matrix.column_iter_mut().skip(1) {
            column.set_cell_alignment(CellAlignment::Center);
        }
        let _ = writeln!(out, "{matrix}");
        out
    }
}

/// A table without borders, columns two spaces apart.
pub(crate) fn plain<I, T>(header: I) -> Table
where
    I: IntoIterator<Item = T>,
    T: Into<comfy_table::Cell>,
{
    let mut table = Table::new();
    table
        .load_preset(comfy_table::presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header);
    // Columns two spaces apart, nothing before the first or after the last.
    let columns = table.column_count();
    for (i, column) in table.column_iter_mut().enumerate() {
        column.set_padding((0, if i + 1 == columns { 0 } else { 2 }));
    }
    table
}

/// `CPU:0` for a device of `task`.
fn short(device: &str, task: &TaskId) -> String {
    device
        .strip_prefix(&format!("{task}/device:"))
        .unwrap_or(device)
        .to_owned()
}

/// `worker:1/CPU:0` for `/job:worker/replica:0/task:1/device:CPU:0`.
fn label(device: &str) -> String {
    let parts: Vec<&str> = device.trim_start_matches('/').split('/').collect();
    match parts.as_slice() {
        [job, _, task, dev] => format!(
            "{}:{}/{}",
            job.trim_start_matches("job:"),
            task.trim_start_matches("task:"),
            dev.trim_start_matches("device:")
        ),
        _ => device.to_owned(),
    }
}
