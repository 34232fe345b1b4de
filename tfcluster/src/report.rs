//! What `up` and `connect` print about a connected cluster: each task, its address and the
//! devices it may see, as a table with a visibility matrix, or as JSON.

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
        Format::Json => format!("{}\n", to_json(ctx)),
        Format::Table => table(ctx),
    }
}

/// The devices of `task` as the context discovered them.
fn devices_of(ctx: &Context, task: &TaskId) -> Vec<String> {
    let prefix = format!("{task}/");
    ctx.list_logical_devices()
        .into_iter()
        .filter(|d| d.name.starts_with(&prefix))
        .map(|d| d.name)
        .collect()
}

fn to_json(ctx: &Context) -> serde_json::Value {
    let tasks: Vec<_> = ctx
        .remote_tasks()
        .into_iter()
        .map(|(task, address)| {
            json!({
                "task": task.to_string(),
                "job": task.job,
                "index": task.task,
                "address": address,
                "devices": devices_of(ctx, &task),
                "visible": ctx.visible_devices(&task).unwrap_or_default(),
            })
        })
        .collect();
    json!({
        "context_id": ctx.context_id(),
        "local": {
            "address": ctx.local_address(),
            "devices": ctx.list_logical_devices()
                .into_iter()
                .filter(|d| !d.name.starts_with("/job:"))
                .map(|d| d.name)
                .collect::<Vec<_>>(),
        },
        "tasks": tasks,
    })
}

fn table(ctx: &Context) -> String {
    let tasks = ctx.remote_tasks();
    let mut listing = plain(["task", "address", "devices"]);
    for (task, address) in &tasks {
        let devices: Vec<String> = devices_of(ctx, task)
            .iter()
            .map(|d| short(d, task))
            .collect();
        listing.add_row([task.to_string(), address.clone(), devices.join(" ")]);
    }
    let mut out = format!("{listing}\n");
    // Who may see what: one column per device of the cluster.
    let all: Vec<String> = ctx
        .list_logical_devices()
        .into_iter()
        .map(|d| d.name)
        .filter(|n| n.starts_with("/job:"))
        .collect();
    let filtered = tasks.iter().any(|(t, _)| {
        let seen = ctx.visible_devices(t).unwrap_or_default();
        all.iter().any(|d| !seen.contains(d))
    });
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
        for (task, _) in &tasks {
            let seen = ctx.visible_devices(task).unwrap_or_default();
            let count = all.iter().filter(|d| seen.contains(*d)).count();
            summary.add_row([
                task.to_string(),
                format!("{count} of {} devices", all.len()),
            ]);
        }
        let _ = writeln!(out, "{summary}");
        return out;
    }
    let header = std::iter::once(String::new()).chain(all.iter().map(|d| label(d)));
    let mut matrix = plain(header);
    for (task, _) in &tasks {
        let seen = ctx.visible_devices(task).unwrap_or_default();
        let marks = all
            .iter()
            .map(|device| if seen.contains(device) { "x" } else { "." }.to_owned());
        matrix.add_row(std::iter::once(task.to_string()).chain(marks));
    }
    for column in matrix.column_iter_mut().skip(1) {
        column.set_cell_alignment(CellAlignment::Center);
    }
    let _ = writeln!(out, "{matrix}");
    out
}

/// A table without borders, columns two spaces apart.
fn plain<I, T>(header: I) -> Table
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
