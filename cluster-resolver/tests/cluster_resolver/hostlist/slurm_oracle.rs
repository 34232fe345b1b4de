//! Differential test against real Slurm: `scontrol show hostnames LIST` is Slurm's own
//! expansion and `scontrol show hostlist a,b,c` its own compression. Hand-picked edge cases
//! (including every documented difference, asserted as a difference so that a change in Slurm
//! shows up) plus a few hundred pseudo-random hostlists from a fixed seed.
//!
//! Needs `scontrol` (Debian: `apt-get install -y slurm-client`) and fails, never skips,
//! without it. No daemon is needed: these two subcommands only read `slurm.conf`, and a
//! two-line one in a temporary directory (`ClusterName`, `SlurmctldHost`) is enough.

use std::path::{Path, PathBuf};
use std::process::Command;

use cluster_resolver::hostlist::{HostList, compress, expand};

const INSTALL: &str = "this differential test runs Slurm's own hostlist code through `scontrol` \
     and cannot run without it: install it with `apt-get install -y slurm-client` (Debian/Ubuntu; \
     `slurm` elsewhere) so that `scontrol` is on PATH";

/// `scontrol` with a throwaway `slurm.conf`.
struct Scontrol {
    bin: PathBuf,
    dir: PathBuf,
}

impl Scontrol {
    fn start() -> Self {
        let bin =
            find_on_path("scontrol").unwrap_or_else(|| panic!("scontrol is missing: {INSTALL}"));
        let dir =
            std::env::temp_dir().join(format!("tfcluster-hostlist-oracle-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the oracle's temp dir");
        // Without a config scontrol exits ("Could not establish a configuration source"), and
        // these two keys are the minimum it accepts; no daemon is contacted.
        std::fs::write(
            dir.join("slurm.conf"),
            "ClusterName=oracle\nSlurmctldHost=localhost\n",
        )
        .expect("write slurm.conf");
        let oracle = Scontrol { bin, dir };
        match oracle.hostnames("n[1-2]") {
            Ok(v) if v == ["n1", "n2"] => oracle,
            other => panic!(
                "{} does not work as an oracle (`show hostnames n[1-2]` gave {other:?}); {INSTALL}",
                oracle.bin.display()
            ),
        }
    }

    /// Slurm's expansion, or its error text.
    fn hostnames(&self, list: &str) -> Result<Vec<String>, String> {
        self.run("hostnames", list)
    }

    /// Slurm's compression of comma-joined names, or its error text.
    fn hostlist(&self, names: &[String]) -> Result<String, String> {
        self.run("hostlist", &names.join(","))
            .map(|lines| lines.concat())
    }

    fn run(&self, what: &str, arg: &str) -> Result<Vec<String>, String> {
        let out = Command::new(&self.bin)
            .args(["show", what, arg])
            .env("SLURM_CONF", self.dir.join("slurm.conf"))
            // Stop getopt from reading an argument that starts with '-' as an option.
            .env("POSIXLY_CORRECT", "1")
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}; {INSTALL}", self.bin.display()));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Slurm's own bug (documented): a range ending at 2^64-1 overflows its loop.
        if out.status.code().is_none() {
            return Err(format!("scontrol crashed ({})", out.status));
        }
        // scontrol exits 0 even for a bad hostlist; the verdict is on stderr.
        if stderr.contains("Invalid hostlist") {
            return Err(stderr.trim().to_owned());
        }
        assert!(
            out.status.success() && stderr.trim().is_empty(),
            "scontrol show {what} {arg:?} failed unexpectedly ({}): {stderr}",
            out.status
        );
        // Not `lines()`, which would also eat a '\r' that belongs to a name.
        Ok(stdout.split_terminator('\n').map(str::to_owned).collect())
    }
}

impl Drop for Scontrol {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// What the oracle and we are expected to do with an input.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// Same hosts, or both reject it.
    Same,
    /// We expand it, Slurm 22.05 rejects it (documented difference).
    OnlyWeAccept,
    /// Slurm expands it (to garbage or by a lenient `strtoul`), we reject it (documented).
    OnlySlurmAccepts,
    /// Both accept it, with different hosts (documented).
    Differ,
    /// We expand it, Slurm's `scontrol` dies of a signal (documented).
    SlurmCrashes,
}

const EDGE_CASES: &[(&str, Expect)] = {
    use Expect::*;
    &[
        // Padding, including mixed widths.
        ("n[009-011]", Same),
        ("b04-[09-10]", Same),
        ("n[9-011]", Same),
        ("n[09-011]", Same),
        ("n[011-12]", Same),
        ("n[001-2]", Same),
        ("n[01-3,1-02]", Same),
        ("n[0000000000000000000000001-2]", Same),
        ("n[98-101]", Same),
        ("n[0098-0101]", Same),
        ("host-[001-002]", Same),
        ("nodes[006,011]", Same),
        ("listserv01,listserv3", Same),
        ("n9,n010", Same),
        ("n[9-10],n[011]", Same),
        ("n[9-10],n011,n[012]", Same),
        // Lists, singles, order, duplicates.
        ("node", Same),
        ("n[1]", Same),
        ("n[01]", Same),
        ("[1-3]", Same),
        ("n[3,1,2]", Same),
        ("n[1-3,1-2]", Same),
        ("n[1-2],n1,n[1-2]", Same),
        ("n[1,1,2]", Same),
        ("n[3-3]", Same),
        ("linux[1,2]", Same),
        ("alpha,beta,gamma", Same),
        ("n[1-2],n[3-4]", Same),
        // Several groups, Slurm's order.
        ("a[1-2]b[3-4]", Same),
        ("n[1-2][3-4]", Same),
        ("n[1-3]-x[1-2]", Same),
        ("a[1-3]b[1-2]c[1]", Same),
        ("n[1-2]b[3-4]c[5-6]", Same),
        ("n[1-2]b[3-4]c[5-6]d[7-8]", Same),
        ("n[1,3]b[5-6,8]c[0-1]", Same),
        ("rack[0-1]-node[8-11]", Same),
        ("a[1-2]b[3-4],c", Same),
        // Separators and whitespace.
        ("", Same),
        (",", Same),
        ("n1,,n2", Same),
        (",n1", Same),
        ("n1,", Same),
        (" n1", Same),
        ("n1 n2", Same),
        ("a b,c\td", Same),
        ("n[1-2],,", Same),
        ("a;b", Same),
        // Numbers at the edges.
        ("n[18446744073709551615]", Same),
        ("n[4294967295-4294967296]", Same),
        ("n[1-65536]", Same),
        // Both reject.
        ("n[5-3]", Same),
        ("n[011-9]", Same),
        ("n[]", Same),
        ("n[a-b]", Same),
        ("n[1-2-3]", Same),
        ("n[-1]", Same),
        ("n[1,]", Same),
        ("n[[1]]", Same),
        ("n[1]]", Same),
        ("n[1-2]]", Same),
        ("n[1 ]", Same),
        ("n[1 2]", Same),
        ("n[0x1]", Same),
        ("n[0-99999999999]", Same),
        ("a[1-2]b]c[3]", Same),
        // Documented differences.
        ("n[1-2]x", OnlyWeAccept),
        ("n[1-2].ib", OnlyWeAccept),
        ("n[1]x", OnlyWeAccept),
        ("a[1-2]b[3-4]c", OnlyWeAccept),
        ("n[1-65537]", OnlyWeAccept),
        ("n[1-2", OnlySlurmAccepts),
        ("n[1", OnlySlurmAccepts),
        ("x,n[1,m", OnlySlurmAccepts),
        ("a]b", OnlySlurmAccepts),
        ("n1]", OnlySlurmAccepts),
        ("n[+1]", OnlySlurmAccepts),
        ("n[ 1-2]", OnlySlurmAccepts),
        ("n[1- 2]", OnlySlurmAccepts),
        ("n[18446744073709551616]", OnlySlurmAccepts),
        ("n18446744073709551616", Differ),
        // Slurm separates on ',', ' ', '\t' only: a newline or CR is part of a name there.
        ("n[1-2]\n", OnlyWeAccept),
        ("a\n", Differ),
        ("a\rb", Differ),
        ("a\r\nb", Differ),
        ("n[18446744073709551614-18446744073709551615]", SlurmCrashes),
    ]
};

/// Names for `compress` against `scontrol show hostlist`.
const COMPRESS_CASES: &[&str] = &[
    "n1,n2,n3",
    "n3,n1,n2",
    "n1,n2,n1",
    "n2,n1",
    "b,a",
    "n1,m1,n2",
    "n009,n010,n011",
    "n9,n10,n11",
    "n09,n10,n100",
    "n1,n01",
    "n01,n1",
    "b04-09,b04-10",
    "a1b3,a1b4,a2b3,a2b4",
    "node",
    "n1,n3,n5",
    "n1,n2,n4,n5",
    "n,n1",
    "n1x,n2x",
    "n1,n1",
    "n0,n00",
    "n00,n01",
    "n000,n1000",
    "n99,n100",
    "n099,n100",
    "n9,n010",
    "n9,n10,n011",
    "n1,n2,n10",
    "x1,n1,x2",
    "1,2,3",
    "0,00,1",
    "a,b,a",
    "n1,m,n2,n3",
    "a1-1,a1-2",
    "n1,n2,n2,n3",
    "n3,n2,n1",
    "n1.ib,n2.ib",
    "n001,n002,n003,n1000",
    "n9,n10,n9",
    "listserv01,listserv3,listserv02,listserv4",
    "n0000000000000000000000001,n0000000000000000000000002",
];

/// SplitMix64: a fixed, dependency-free sequence, so every run tests the same lists.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }

    fn letters(&mut self, max: u64) -> String {
        (0..1 + self.below(max))
            .map(|_| char::from(b'a' + self.below(4) as u8))
            .collect()
    }

    /// A number written with `pad` extra leading zeros.
    fn padded(&mut self, v: u64) -> String {
        let pad = [0, 0, 0, 1, 2][self.below(5) as usize];
        format!("{}{v}", "0".repeat(pad))
    }

    fn low(&mut self) -> u64 {
        match self.below(6) {
            0..=2 => self.below(20),
            3 => 95 + self.below(10),
            4 => 995 + self.below(10),
            _ => self.below(3000),
        }
    }

    /// A bracket group: one to three ranges or single numbers.
    fn group(&mut self) -> String {
        let ranges: Vec<String> = (0..1 + self.below(3))
            .map(|_| {
                let lo = self.low();
                let lo_text = self.padded(lo);
                if self.below(3) == 0 {
                    lo_text
                } else {
                    let hi = lo + self.below(12);
                    format!("{lo_text}-{}", self.padded(hi))
                }
            })
            .collect();
        format!("[{}]", ranges.join(","))
    }

    /// A name pattern in the grammar Slurm 22.05 and we share (no text after the last group).
    fn pattern(&mut self) -> String {
        if self.below(10) < 3 {
            let mut name = self.letters(4);
            if self.below(2) == 0 {
                let v = self.below(300);
                name += &self.padded(v);
            }
            if self.below(4) == 0 {
                name += "-";
                name += &self.letters(2);
            }
            return name;
        }
        let mut s = match self.below(6) {
            0 => String::new(),
            1 => self.letters(3) + "-",
            2 => format!("{}{}-", self.letters(2), self.below(100)),
            _ => self.letters(5),
        };
        let groups = [1, 1, 1, 1, 2, 2, 3][self.below(7) as usize];
        for g in 0..groups {
            if g > 0 {
                let between = match self.below(5) {
                    0 => String::new(),
                    1 => "-".to_owned(),
                    2 => self.below(10).to_string(),
                    _ => self.letters(2),
                };
                s += &between;
            }
            s += &self.group();
        }
        s
    }

    fn hostlist(&mut self) -> String {
        let mut s = String::new();
        if self.below(10) == 0 {
            s += self.pick(&[",", " ", "\t"]);
        }
        for i in 0..1 + self.below(4) {
            if i > 0 {
                s += self.pick(&[",", ",", ",", " ", ",,", "\t", ", ", " \t"]);
            }
            s += &self.pattern();
        }
        if self.below(10) == 0 {
            s += self.pick(&[",", " ", "\t"]);
        }
        s
    }

    /// The same names reordered and with a duplicate, as a rank order might be.
    fn shuffle(&mut self, names: &[String]) -> Vec<String> {
        let mut out = names.to_vec();
        if out.len() > 1 {
            let cut = 1 + self.below(out.len() as u64 - 1) as usize;
            out.rotate_left(cut);
            let (a, b) = (self.below(out.len() as u64), self.below(out.len() as u64));
            out.swap(a as usize, b as usize);
            let dup = out[self.below(out.len() as u64) as usize].clone();
            out.insert(self.below(out.len() as u64 + 1) as usize, dup);
        }
        out
    }
}

#[derive(Default)]
struct Report {
    checked: usize,
    failures: Vec<String>,
}

impl Report {
    fn fail(&mut self, msg: String) {
        self.failures.push(msg);
    }

    /// Our expansion against Slurm's, under the expectation.
    fn expansion(&mut self, oracle: &Scontrol, input: &str, expect: Expect) {
        self.checked += 1;
        let ours = expand(input).map_err(|e| e.to_string());
        let slurm = oracle.hostnames(input);
        let ok = match expect {
            Expect::Same => match (&ours, &slurm) {
                (Ok(a), Ok(b)) => a == b,
                (Err(_), Err(_)) => true,
                _ => false,
            },
            Expect::OnlyWeAccept => ours.is_ok() && slurm.is_err(),
            Expect::OnlySlurmAccepts => ours.is_err() && slurm.is_ok(),
            Expect::Differ => matches!((&ours, &slurm), (Ok(a), Ok(b)) if a != b),
            Expect::SlurmCrashes => {
                ours.is_ok()
                    && slurm
                        .as_ref()
                        .is_err_and(|e| e.starts_with("scontrol crashed"))
            }
        };
        if !ok {
            self.fail(format!(
                "expand({input:?}), expected {expect:?}:\n  ours:  {}\n  slurm: {}",
                short(&ours),
                short(&slurm)
            ));
        }
        if let Ok(hosts) = &ours
            && HostList::parse(input).map(|l| l.len()).ok() != Some(hosts.len())
        {
            self.fail(format!(
                "HostList::parse({input:?}).len() != expand().len()"
            ));
        }
    }

    /// `compress` against `scontrol show hostlist`, and Slurm reading our compression back.
    fn compression(&mut self, oracle: &Scontrol, names: &[String]) {
        if names.is_empty() {
            return;
        }
        self.checked += 1;
        let ours = compress(names);
        match oracle.hostlist(names) {
            Ok(slurm) if slurm == ours => {}
            other => self.fail(format!(
                "compress({names:?}):\n  ours:  {ours:?}\n  slurm: {other:?}"
            )),
        }
        match oracle.hostnames(&ours) {
            Ok(back) if back == names => {}
            other => self.fail(format!(
                "Slurm expands our compress({names:?}) = {ours:?} to {}",
                short(&other)
            )),
        }
        match expand(&ours) {
            Ok(back) if back == names => {}
            other => self.fail(format!(
                "expand(compress({names:?})) = {other:?} via {ours:?}"
            )),
        }
    }
}

fn short<E: std::fmt::Debug>(r: &Result<Vec<String>, E>) -> String {
    match r {
        Ok(v) if v.len() > 12 => format!(
            "Ok({} hosts: {:?} … {:?})",
            v.len(),
            &v[..6],
            &v[v.len() - 3..]
        ),
        other => format!("{other:?}"),
    }
}

/// Compression cases with documented differences at the top of the 64-bit range.
fn compress_documented_differences(oracle: &Scontrol, report: &mut Report) {
    // Slurm clamps a number above 2^64-1, so its compression renames the second host.
    let names = ["n18446744073709551615", "n18446744073709551616"].map(str::to_owned);
    let ours = compress(&names);
    report.checked += 1;
    if ours != "n18446744073709551615,n18446744073709551616"
        || expand(&ours).ok().as_deref() != Some(&names[..])
        || oracle.hostlist(&names).as_deref() != Ok("n[18446744073709551615,18446744073709551615]")
    {
        report.fail(format!(
            "huge-number compression: ours {ours:?}, slurm {:?}",
            oracle.hostlist(&names)
        ));
    }
    // Both compress to the same range, which only we can read back: Slurm crashes on it.
    let names = ["n18446744073709551614", "n18446744073709551615"].map(str::to_owned);
    let ours = compress(&names);
    report.checked += 1;
    if oracle.hostlist(&names).as_deref() != Ok(ours.as_str())
        || expand(&ours).ok().as_deref() != Some(&names[..])
        || !oracle
            .hostnames(&ours)
            .is_err_and(|e| e.starts_with("scontrol crashed"))
    {
        report.fail(format!("top-of-range compression: ours {ours:?}"));
    }
}

#[test]
fn expand_and_compress_agree_with_slurm_scontrol() {
    let oracle = Scontrol::start();
    let mut report = Report::default();

    for &(input, expect) in EDGE_CASES {
        report.expansion(&oracle, input, expect);
    }
    for names in COMPRESS_CASES {
        let names: Vec<String> = names.split(',').map(str::to_owned).collect();
        report.compression(&oracle, &names);
    }
    compress_documented_differences(&oracle, &mut report);

    let mut rng = Rng(0x7F_C1_05_7E_12);
    let mut generated = 0;
    while generated < 300 {
        let input = rng.hostlist();
        // Keep each scontrol call small; the cap is about run time, not correctness.
        if HostList::parse(&input).is_ok_and(|l| l.len() > 1500) {
            continue;
        }
        generated += 1;
        report.expansion(&oracle, &input, Expect::Same);
        if let Ok(names) = expand(&input) {
            report.compression(&oracle, &names);
            if generated % 3 == 0 {
                let shuffled = rng.shuffle(&names);
                report.compression(&oracle, &shuffled);
            }
        }
    }

    eprintln!(
        "hostlist vs scontrol: {} comparisons, {} failures",
        report.checked,
        report.failures.len()
    );
    assert!(
        report.failures.is_empty(),
        "{} of {} comparisons with Slurm failed:\n{}",
        report.failures.len(),
        report.checked,
        report.failures.join("\n")
    );
}
