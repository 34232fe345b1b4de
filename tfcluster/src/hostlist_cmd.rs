//! `tfcluster hostlist`: Slurm hostlist expansion and compression.

use cluster_resolver::hostlist;

use crate::args::Failure;

const HELP: &str = "\
tfcluster hostlist — expand or compress Slurm hostlists

USAGE:
    tfcluster hostlist expand <LIST>            one host per line, in Slurm's order
    tfcluster hostlist compress <HOST>...       one hostlist, order kept (as scontrol)
    tfcluster hostlist tasks-per-node <COUNTS>  e.g. 2(x3),1 -> one count per node

Zero padding is kept per range endpoint (n[009-011] -> n009 n010 n011), brackets may hold
lists and ranges (n[1-3,7]), and a name may have several bracket groups.

EXAMPLE:
    tfcluster hostlist expand 'rack[1-2]-node[01-03]'
";

pub(crate) fn run(args: &[String]) -> Result<(), Failure> {
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let invalid = |e: cluster_resolver::Error| Failure::Input(e.to_string());
    match words.as_slice() {
        [] | ["--help" | "-h", ..] => {
            print!("{HELP}");
            Ok(())
        }
        ["expand", list] => {
            let hosts = hostlist::expand(list).map_err(invalid)?;
            print!(
                "{}",
                hosts.iter().map(|h| format!("{h}\n")).collect::<String>()
            );
            Ok(())
        }
        ["compress", hosts @ ..] if !hosts.is_empty() => {
            println!("{}", hostlist::compress(hosts));
            Ok(())
        }
        ["tasks-per-node", counts] => {
            let counts = hostlist::expand_tasks_per_node(counts).map_err(invalid)?;
            let line: Vec<String> = counts.iter().map(u32::to_string).collect();
            println!("{}", line.join(" "));
            Ok(())
        }
        _ => Err(Failure::Usage(format!(
            "hostlist: expected `expand LIST`, `compress HOST...` or `tasks-per-node COUNTS`, got {words:?}"
        ))),
    }
}
