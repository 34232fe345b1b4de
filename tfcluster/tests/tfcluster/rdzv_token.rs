//! Rendezvous tokens through the CLI: two agents given one token file form their job and
//! finish, while a third with another token, and a fourth with none, are refused at once
//! (exit 1, saying the rendezvous refused the token for the job), and an observer sees
//! the job only with the token; the serving agent's rendezvous takes the job's token as its
//! own (a stranger without it creates and lists no job there); a rendezvous served with
//! a token of its own takes an agent given it in `TFCLUSTER_RDZV_TOKEN`, whose task and health
//! check never see it; `rendezvous token`
//! prints a fresh one; a token file and the variable together are a usage error.

use std::time::Duration;

use super::elastic_run::{scratch, serving};
use super::launch::Launch;

const TIMEOUT: Duration = Duration::from_secs(60);

/// Each task says it runs, then waits for `$DIR/go`.
const WAIT_FOR_GO: &str =
    r#"echo "running $TFCLUSTER_NODE_RANK"; while [ ! -e "$DIR/go" ]; do sleep 0.1; done"#;

/// `tfcluster rendezvous token`'s output, checked.
fn fresh_token() -> String {
    let out = super::tfcluster(&["rendezvous", "token"]);
    assert!(out.status.success(), "{out:?}");
    let token = super::stdout(&out).trim_end().to_owned();
    assert_eq!(token.len(), 64, "{token}");
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "{token}");
    token
}

#[test]
fn agents_with_one_token_finish_and_others_are_refused_at_once() {
    let dir = scratch("token");
    let dir_text = dir.path().to_str().expect("a UTF-8 path").to_owned();
    let (ours, theirs) = (dir.path().join("ours"), dir.path().join("theirs"));
    std::fs::write(&ours, format!("{}\n", fresh_token())).unwrap();
    std::fs::write(&theirs, fresh_token()).unwrap();
    let ours = ours.to_str().unwrap().to_owned();
    let agent = |endpoint: &str, token_file: Option<&str>, env: &[(&str, &str)]| {
        let mut args = vec![
            "run",
            "--rdzv",
            endpoint,
            "--nodes",
            "2",
            "--rdzv-last-call",
            "1s",
        ];
        args.extend(super::unhurried(&[]));
        if let Some(file) = token_file {
            args.extend(["--rdzv-token-file", file]);
        }
        args.extend(["--", "sh", "-c", WAIT_FOR_GO]);
        Launch::start(&args, &[env, &[("DIR", dir_text.as_str())]].concat())
    };
    let (mut a, endpoint) = serving(|endpoint, log| agent(endpoint, Some(&ours), &[log]));
    let mut b = agent(&endpoint, Some(&ours), &[]);
    a.lines_with("running ", 1, TIMEOUT);
    b.lines_with("running ", 1, TIMEOUT);

    let mut other = agent(&endpoint, Some(theirs.to_str().unwrap()), &[]);
    assert_eq!(other.wait(TIMEOUT).code(), Some(1), "{}", other.stderr());
    let stderr = other.stderr();
    assert!(
        stderr.contains(
            "the rendezvous refused this host's token for job \"default\": every host of the job \
             needs the same --rdzv-token-file or TFCLUSTER_RDZV_TOKEN"
        ),
        "{stderr}"
    );
    // The serving agent's rendezvous has the job's token as its own: refused before the job.
    assert!(
        stderr.contains(
            "this rendezvous takes only calls with its token, and the call carries another"
        ),
        "{stderr}"
    );
    assert!(
        other.ran_for() < Duration::from_secs(8),
        "retried: {stderr}"
    );

    let mut open = agent(&endpoint, None, &[]);
    assert_eq!(open.wait(TIMEOUT).code(), Some(1), "{}", open.stderr());
    let stderr = open.stderr();
    assert!(
        stderr.contains(&format!(
            "warning: no rendezvous token (--rdzv-token-file or TFCLUSTER_RDZV_TOKEN): anyone \
             who reaches {endpoint} can join job \"default\" as a new host"
        )),
        "{stderr}"
    );
    assert!(
        stderr
            .contains("this rendezvous takes only calls with its token, and the call carries none"),
        "{stderr}"
    );

    // A stranger without the token creates no job of its own there (before the serving
    // agent took the job's token as the rendezvous's, job "strangers" was made and ran),
    // and lists none.
    let mut stranger = Launch::start(
        &[
            "run",
            "--rdzv",
            &endpoint,
            "--rdzv-id",
            "strangers",
            "--",
            "echo",
            "stranger ran",
        ],
        &[],
    );
    assert_eq!(
        stranger.wait(TIMEOUT).code(),
        Some(1),
        "{}",
        stranger.stderr()
    );
    assert!(
        !stranger.stdout().contains("stranger ran"),
        "{}",
        stranger.stdout()
    );
    assert!(
        stranger
            .stderr()
            .contains("Join to job \"strangers\": this rendezvous takes only calls with its token"),
        "{}",
        stranger.stderr()
    );
    let listing = super::tfcluster(&["status", "--rdzv", &endpoint, "--format", "json"]);
    assert!(listing.status.success(), "{listing:?}");
    let listed = super::stdout(&listing);
    assert!(
        !listed.contains("default") && !listed.contains("strangers"),
        "{listed}"
    );
    let ours_listing = super::tfcluster(&[
        "status",
        "--rdzv",
        &endpoint,
        "--format",
        "json",
        "--rdzv-token-file",
        &ours,
    ]);
    assert!(
        super::stdout(&ours_listing).contains("default"),
        "{ours_listing:?}"
    );

    // An observer needs the token too.
    let resolve = [
        "resolve",
        "--from",
        "rendezvous",
        "--rdzv",
        &endpoint,
        "--json",
    ];
    let mut blind = Launch::start(&resolve, &[]);
    assert_ne!(blind.wait(TIMEOUT).code(), Some(0), "{}", blind.stdout());
    assert!(
        blind.stderr().contains("Unauthenticated"),
        "{}",
        blind.stderr()
    );
    let mut seeing = Launch::start(&[&resolve[..], &["--rdzv-token-file", &ours]].concat(), &[]);
    assert_eq!(seeing.wait(TIMEOUT).code(), Some(0), "{}", seeing.stderr());
    assert!(
        seeing.stdout().contains("\"worker\""),
        "{}",
        seeing.stdout()
    );

    std::fs::write(dir.path().join("go"), "").unwrap();
    for agent in [&mut a, &mut b] {
        assert_eq!(agent.wait(TIMEOUT).code(), Some(0), "{}", agent.stderr());
        assert!(
            !agent.stderr().contains("no rendezvous token"),
            "{}",
            agent.stderr()
        );
    }
}

#[test]
fn a_rendezvous_served_with_its_own_token_takes_agents_given_it() {
    let dir = scratch("server-token");
    let file = dir.path().join("token");
    let token = fresh_token();
    std::fs::write(&file, &token).unwrap();
    let file = file.to_str().unwrap();
    let mut server = Launch::start_without(
        &[
            "rendezvous",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--token-file",
            file,
        ],
        &[],
        &["TFCLUSTER_RDZV_TOKEN"],
    );
    let line = server
        .lines_with("serving the rendezvous on ", 1, TIMEOUT)
        .remove(0);
    assert!(
        !server.stderr().contains("no rendezvous token"),
        "{}",
        server.stderr()
    );
    let endpoint = line.rsplit(' ').next().expect("an address").to_owned();
    // Neither the task nor the health check sees the agent's token (a host whose check
    // fails would never join).
    let run = [
        "run",
        "--rdzv",
        &endpoint,
        "--health-check",
        "test -z \"$TFCLUSTER_RDZV_TOKEN\"",
        "--",
        "sh",
        "-c",
        "echo round $TFCLUSTER_ROUND token=${TFCLUSTER_RDZV_TOKEN-unset}",
    ];
    let mut agent = Launch::start(&run, &[("TFCLUSTER_RDZV_TOKEN", &token)]);
    assert_eq!(agent.wait(TIMEOUT).code(), Some(0), "{}", agent.stderr());
    assert!(
        agent.stdout().contains("/worker:0] round 1 token=unset"),
        "{}",
        agent.stdout()
    );
    // Without it: refused, naming the rendezvous's own token.
    let mut without = Launch::start_without(&run, &[], &["TFCLUSTER_RDZV_TOKEN"]);
    assert_eq!(
        without.wait(TIMEOUT).code(),
        Some(1),
        "{}",
        without.stderr()
    );
    assert!(
        without
            .stderr()
            .contains("this rendezvous takes only calls with its token"),
        "{}",
        without.stderr()
    );
    server.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(server.wait(TIMEOUT).code(), Some(0), "{}", server.stderr());
}

#[test]
fn a_token_file_and_the_variable_together_are_a_usage_error() {
    let dir = scratch("token-conflict");
    let file = dir.path().join("token");
    std::fs::write(&file, "0123456789abcdef").unwrap();
    let file = file.to_str().unwrap();
    let env = [("TFCLUSTER_RDZV_TOKEN", "fedcba9876543210")];
    for args in [
        vec![
            "run",
            "--rdzv",
            "127.0.0.1:1",
            "--rdzv-token-file",
            file,
            "--",
            "true",
        ],
        vec![
            "rendezvous",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--token-file",
            file,
        ],
    ] {
        let mut launch = Launch::start(&args, &env);
        assert_eq!(launch.wait(TIMEOUT).code(), Some(2), "{}", launch.stderr());
        let stderr = launch.stderr();
        assert!(
            stderr.contains(&format!(
                "token-file {file} and TFCLUSTER_RDZV_TOKEN both give"
            )),
            "{stderr}"
        );
    }
    // A token too short names its file and the rule, not the value.
    std::fs::write(dir.path().join("short"), "s3cret").unwrap();
    let short = dir.path().join("short");
    let mut launch = Launch::start_without(
        &[
            "run",
            "--rdzv",
            "127.0.0.1:1",
            "--rdzv-token-file",
            short.to_str().unwrap(),
            "--",
            "true",
        ],
        &[],
        &["TFCLUSTER_RDZV_TOKEN"],
    );
    assert_eq!(launch.wait(TIMEOUT).code(), Some(2), "{}", launch.stderr());
    let stderr = launch.stderr();
    assert!(
        stderr.contains("is 6 bytes long; a token is 16 to 1024 bytes"),
        "{stderr}"
    );
    assert!(!stderr.contains("s3cret"), "{stderr}");
}
