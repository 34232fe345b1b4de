//! A secured job across hosts (network namespaces, [`Job`]) with real TensorFlow 2.21
//! training (`elastic_train.py`, MultiWorkerMirroredStrategy), on both backends: every host
//! has the job's token (`TFCLUSTER_RDZV_TOKEN`) and talks to the rendezvous over mutual TLS.
//! Two hosts train as four workers while intruders try their way in from other hosts of the
//! same network: a host with the certificate but another token is refused at once, naming the
//! token; on the built-in rendezvous a host outside `--rdzv-allow`'s networks is never
//! answered; on etcd the job's record holds the token's hash, never the token.

use std::time::Duration;

use super::host_job::{Job, done};
use super::launch::Launch;

/// The token of the job's hosts, and another one.
const TOKEN: &str = "5ec0e7a11f0b0a7d5ec0e7a11f0b0a7d5ec0e7a11f0b0a7d5ec0e7a11f0b0a7d";
const OTHER_TOKEN: &str = "0dd0dd0dd0dd0dd0dd0dd0dd0dd0dd0dd0dd0dd0dd0dd0dd0dd0dd0dd0dd0dd0";

/// What an agent refused for its token says.
const TOKEN_REFUSED: &str = "the rendezvous refused this host's token for job \"default\"";

/// A job of `hosts` hosts whose agents train as `--nodes 2`, two tasks each, with the job's
/// token, and no spare interpreters (elastic_hosts.rs's `flags`); none started.
fn secured_job(name: &str, hosts: usize) -> Job {
    let env = [
        ("EXPECT_RESTART_COUNT", "0"),
        ("EXPECT_WORKERS", "4"),
        ("STEP_SECONDS", "0"),
        ("TFCLUSTER_RDZV_TOKEN", TOKEN),
    ];
    let flags = super::unhurried(&[
        "--no-prewarm",
        "--nodes",
        "2",
        "--tasks-per-node",
        "2",
        "--rdzv-last-call",
        "2s",
    ]);
    Job::training(name, hosts, &flags, &env)
}

/// Starts host `h`'s agent with another token and asserts it is refused at once for it
/// while the job goes on.
fn refused_for_its_token(job: &mut Job, h: usize) {
    job.start_with(h, &[("TFCLUSTER_RDZV_TOKEN", OTHER_TOKEN)]);
    let code = job.agent(h).wait(Duration::from_secs(60)).code();
    let stderr = job.agent(h).stderr();
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains(TOKEN_REFUSED), "{stderr}");
    assert!(
        !stderr.contains(TOKEN) && !stderr.contains(OTHER_TOKEN),
        "a token printed: {stderr}"
    );
}

/// From host 2, with the certificate but without the token: on the rendezvous host 0's
/// agent serves (with the job's token as its own), a job of another id cannot be created,
/// and a listing shows no job.
fn stranger_without_the_token(job: &mut Job, files: &tf_oracle::PemFiles) {
    let serving = job.hosts().address(0).to_string();
    let tls = super::rdzv_tls_flags(&files.ca, &files.cert, &files.key);
    let tls: Vec<&str> = tls.iter().map(String::as_str).collect();
    let run = |args: Vec<&str>| {
        let command = job.hosts().command(2, env!("CARGO_BIN_EXE_tfcluster"));
        let mut stranger = Launch::start_by(command, &args, &[], &["TFCLUSTER_RDZV_TOKEN"]);
        let code = stranger.wait(Duration::from_secs(60)).code();
        (code, stranger.stdout(), stranger.stderr())
    };
    let mut create = vec!["run", "--rdzv", &serving, "--rdzv-id", "strangers"];
    create.extend(&tls);
    create.extend(["--", "echo", "stranger ran"]);
    let (code, stdout, stderr) = run(create);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(!stdout.contains("stranger ran"), "{stdout}");
    assert!(
        stderr
            .contains("Join to job \"strangers\": this rendezvous takes only calls with its token"),
        "{stderr}"
    );
    let mut list = vec!["status", "--rdzv", &serving, "--format", "json"];
    list.extend(&tls);
    let (code, stdout, stderr) = run(list);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        !stdout.contains("default") && !stdout.contains("strangers"),
        "{stdout}"
    );
}

/// The job's two hosts finished training as four workers, without a warning about tokens.
fn assert_trained(job: &mut Job) {
    job.expect_exits(&[0, 1], 0);
    let done = done(job);
    assert_eq!(done.len(), 4, "{}", job.stdout());
    assert!(done.iter().all(|d| d.1 == 4), "{done:?}");
    let stderr = job.stderr();
    assert!(!stderr.contains("no rendezvous token"), "{stderr}");
    job.assert_nothing_left();
}

#[test]
fn built_in_over_mtls_with_a_token_trains_and_refuses_other_tokens_and_networks() {
    let mut job = secured_job("secure-builtin", 4);
    // One certificate for the job's hosts, naming the serving host's address.
    let pki = super::scratch("secure-builtin-pki");
    let serving = job.hosts().address(0).to_string();
    let files = tf_oracle::TestCa::new("job CA").write(pki.path(), "job", &[&serving]);
    job.add_flags(&super::rdzv_tls_flags(&files.ca, &files.cert, &files.key));
    // Hosts 0 to 2 may reach the rendezvous; host 3 may not.
    let allowed = format!("{serving}/31,{}", job.hosts().address(2));
    job.add_flags(&["--rdzv-allow", &allowed]);
    job.start_all(2);
    refused_for_its_token(&mut job, 2);
    stranger_without_the_token(&mut job, &files);
    // The right token and certificate from outside the allowed networks: closed before the
    // handshake with TLS's `access_denied` alert, and not tried again.
    job.start(3);
    let code = job.agent(3).wait(Duration::from_secs(60)).code();
    let stderr = job.agent(3).stderr();
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "rendezvous at {serving}:29400 refused Join: PermissionDenied: this host is not in \
             the rendezvous's allowed networks"
        )) && stderr.contains("AccessDenied"),
        "{stderr}"
    );
    assert!(job.agent(3).ran_for() < Duration::from_secs(5), "{stderr}");
    // Without TLS, the token alone does not get a plaintext client in.
    let mut plain = Launch::start_by(
        job.hosts().command(2, env!("CARGO_BIN_EXE_tfcluster")),
        &["resolve", "--from", "rendezvous", "--rdzv", &serving],
        &[("TFCLUSTER_RDZV_TOKEN", TOKEN)],
        &[],
    );
    // Refused at the handshake: a failure to reach the rendezvous, naming it (not a usage
    // error, not a crash), and no cluster printed.
    assert_eq!(plain.wait(Duration::from_secs(60)).code(), Some(1));
    assert!(!plain.stdout().contains("worker"), "{}", plain.stdout());
    assert!(
        plain.stderr().contains(&format!("{serving}:29400")),
        "{}",
        plain.stderr()
    );
    assert_trained(&mut job);
}

#[test]
fn etcd_over_mtls_with_a_token_trains_refuses_other_tokens_and_keeps_only_its_hash() {
    let mut job = secured_job("secure-etcd", 3);
    job.etcd_in_tls(&[0]);
    job.start_all(2);
    refused_for_its_token(&mut job, 2);
    assert_trained(&mut job);
    // What the job left in etcd names it, and holds no token.
    let stored = job.etcd().etcdctl(&["get", "--prefix", ""]);
    assert!(stored.status.success(), "{stored:?}");
    let stored = String::from_utf8_lossy(&stored.stdout);
    assert!(stored.contains("default"), "{stored}");
    assert!(
        !stored.contains(TOKEN) && !stored.contains(OTHER_TOKEN),
        "{stored}"
    );
}
