//! `tfcluster spec`: validate a cluster spec and print it in one of TensorFlow's forms.

use cluster_spec::ClusterSpec;

use crate::args::{Failure, read_input};

const HELP: &str = "\
tfcluster spec — validate a cluster spec and print it

USAGE:
    tfcluster spec [--repr | --json | --tasks | --cluster-def] <SPEC>

SPEC is TF_CONFIG's \"cluster\" JSON: job names to a list of \"host:port\" (a dense job) or to
an object from task index to \"host:port\" (a sparse job). Give it inline, as @FILE, or as -
for standard input. Job names must match [A-Za-z][A-Za-z0-9_]*, addresses must be host:port.

OUTPUT (one of):
    --repr          TensorFlow's repr, jobs sorted by name (the default)
    --json          TensorFlow's as_dict shape as JSON, jobs in the order given
    --tasks         one line per task: JOB TASK ADDRESS
    --cluster-def   the ClusterDef protobuf TensorFlow puts on the wire, as hex

EXAMPLE:
    tfcluster spec '{\"worker\": [\"w0:2222\", \"w1:2222\"], \"ps\": {\"1\": \"p1:2222\"}}'
";

#[derive(Clone, Copy)]
enum Format {
    Repr,
    Json,
    Tasks,
    ClusterDef,
}

pub(crate) fn run(args: &[String]) -> Result<(), Failure> {
    let mut format = Format::Repr;
    let mut input = None;
    for arg in args {
        match arg.as_str() {
            "--help" | "-h" => {
                print!("{HELP}");
                return Ok(());
            }
            "--repr" => format = Format::Repr,
            "--json" => format = Format::Json,
            "--tasks" => format = Format::Tasks,
            "--cluster-def" => format = Format::ClusterDef,
            flag if flag.starts_with("--") => {
                return Err(Failure::Usage(format!("spec: unknown option {flag}")));
            }
            value if input.is_none() => input = Some(value.to_owned()),
            value => {
                return Err(Failure::Usage(format!(
                    "spec: unexpected argument {value:?}"
                )));
            }
        }
    }
    let input =
        input.ok_or_else(|| Failure::Usage("spec: missing SPEC (JSON, @FILE or -)".into()))?;
    let (text, origin) = read_input(&input)?;
    let spec =
        ClusterSpec::from_json(&text).map_err(|e| Failure::Input(format!("{origin}: {e}")))?;
    print!("{}", render(&spec, format));
    Ok(())
}

fn render(spec: &ClusterSpec, format: Format) -> String {
    match format {
        Format::Repr => format!("{spec}\n"),
        Format::Json => format!("{}\n", spec.to_json()),
        Format::ClusterDef => {
            let hex: String = spec
                .encode_cluster_def()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            format!("{hex}\n")
        }
        Format::Tasks => spec
            .jobs()
            .into_iter()
            .flat_map(|job| {
                let tasks = spec.tasks(job).into_iter().flatten();
                tasks.map(move |(index, address)| format!("{job} {index} {address}\n"))
            })
            .collect(),
    }
}
