//! TensorFlow's `ClusterSpec` behaviours (reference/tf-semantics.md section 1), one by one.

use cluster_proto::{ClusterDef, JobDef};
use cluster_spec::{ClusterSpec, Error};
use tf_oracle::unhex;

fn spec(json: &str) -> ClusterSpec {
    ClusterSpec::from_json(json).unwrap_or_else(|e| panic!("{json}: {e}"))
}

fn err(json: &str) -> String {
    match ClusterSpec::from_json(json) {
        Ok(s) => panic!("{json} parsed as {s}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn jobs_keep_definition_order() {
    let s = spec(r#"{"worker": ["w:1"], "ps": ["p:1"], "chief": ["c:1"]}"#);
    assert_eq!(s.jobs(), ["worker", "ps", "chief"]);
    let names: Vec<String> = s.as_cluster_def().job.into_iter().map(|j| j.name).collect();
    assert_eq!(names, ["chief", "ps", "worker"]);
}

#[test]
fn sparse_jobs() {
    let s = spec(r#"{"ps": {"3": "b:2", "0": "a:1"}}"#);
    assert_eq!(s.num_tasks("ps").unwrap(), 2);
    assert_eq!(s.task_indices("ps").unwrap(), [0, 3]);
    assert_eq!(
        s.job_tasks("ps").unwrap(),
        [Some("a:1"), None, None, Some("b:2")]
    );
    assert!(!s.is_dense("ps").unwrap());
    assert_eq!(s.to_json(), r#"{"ps":{"0":"a:1","3":"b:2"}}"#);
    assert_eq!(s.to_string(), "ClusterSpec({'ps': {0: 'a:1', 3: 'b:2'}})");
}

#[test]
fn sparse_job_with_indices_0_to_n_is_dense() {
    let s = spec(r#"{"w": {"1": "b:2", "0": "a:1"}}"#);
    assert!(s.is_dense("w").unwrap());
    assert_eq!(s.to_json(), r#"{"w":["a:1","b:2"]}"#);
    assert_eq!(s, spec(r#"{"w": ["a:1", "b:2"]}"#));
    // {1: x} stays sparse; {0: x} becomes ["x"] (TF's as_dict).
    assert_eq!(
        spec(r#"{"w": {"1": "x:1"}}"#).to_json(),
        r#"{"w":{"1":"x:1"}}"#
    );
    assert_eq!(spec(r#"{"w": {"0": "x:1"}}"#).to_json(), r#"{"w":["x:1"]}"#);
}

#[test]
fn empty_jobs_and_empty_specs() {
    let s = spec(r#"{"w": []}"#);
    assert!(!s.is_empty(), "TF: bool(ClusterSpec({{'w': []}})) is True");
    assert_eq!(s.num_tasks("w").unwrap(), 0);
    assert_eq!(s.task_indices("w").unwrap(), Vec::<u32>::new());
    assert_eq!(s.job_tasks("w").unwrap(), Vec::<Option<&str>>::new());
    assert_eq!(s.to_json(), r#"{"w":{}}"#);
    assert_eq!(s.to_string(), "ClusterSpec({'w': {}})");
    assert_eq!(s, spec(r#"{"w": {}}"#));
    assert_eq!(
        s.as_cluster_def(),
        ClusterDef {
            job: vec![JobDef {
                name: "w".into(),
                tasks: Default::default()
            }]
        }
    );
    let empty = spec("{}");
    assert!(empty.is_empty());
    assert_eq!(empty.to_string(), "ClusterSpec({})");
    assert_eq!(empty, ClusterSpec::default());
    assert_eq!(empty.to_json(), "{}");
}

#[test]
fn equality_ignores_order_and_form() {
    let a = spec(r#"{"worker": ["a:1", "b:2"], "ps": {"0": "p:1"}}"#);
    let b = spec(r#"{"ps": ["p:1"], "worker": {"1": "b:2", "0": "a:1"}}"#);
    assert_eq!(a, b);
    assert_ne!(a, spec(r#"{"worker": ["a:1", "b:3"], "ps": ["p:1"]}"#));
    assert_ne!(a, spec(r#"{"worker": ["a:1", "b:2"]}"#));
    assert_ne!(a, spec(r#"{"worker": ["a:1", "b:2"], "ps": {"1": "p:1"}}"#));
}

#[test]
fn display_is_tensorflow_repr() {
    let s = spec(r#"{"worker": ["worker0:3333", "worker1:4444"], "ps": ["ps0:1111"]}"#);
    assert_eq!(
        s.to_string(),
        "ClusterSpec({'ps': ['ps0:1111'], 'worker': ['worker0:3333', 'worker1:4444']})"
    );
    assert_eq!(format!("{s:?}"), s.to_string());
}

#[test]
fn tensorflow_error_messages() {
    let s = spec(r#"{"w": ["a:1", "b:2", "c:3"], "sparse": {"0": "a:1"}}"#);
    assert_eq!(
        s.num_tasks("unknown").unwrap_err().to_string(),
        "No such job in cluster: 'unknown'"
    );
    assert_eq!(
        s.task_indices("x").unwrap_err(),
        Error::NoSuchJob { job: "x".into() }
    );
    assert_eq!(
        s.task_address("w", 3).unwrap_err().to_string(),
        "No task with index 3 in job 'w'"
    );
    assert_eq!(
        s.task_address("sparse", 2).unwrap_err().to_string(),
        "No task with index 2 in job 'sparse'"
    );
    assert_eq!(
        err(r#"{"worker": "a:1"}"#),
        "The tasks for job 'worker' must be a list or a dictionary from integers to strings (found a string)."
    );
}

#[test]
fn sparse_keys_follow_int_but_strictly() {
    let s = spec(r#"{"ps": {"01": "a:1", "007": "b:2"}}"#);
    assert_eq!(s.task_indices("ps").unwrap(), [1, 7]);
    assert_eq!(
        spec(r#"{"ps": {"2147483647": "a:1"}}"#)
            .task_indices("ps")
            .unwrap(),
        [2147483647]
    );
    for (json, message) in [
        (
            r#"{"ps": {"1": "a:1", "01": "b:2"}}"#,
            r#"job 'ps' specifies two addresses for task 1: "a:1" and "b:2""#,
        ),
        (
            r#"{"ps": {"-1": "a:1"}}"#,
            r#"invalid task index "-1" in job 'ps': task indices must be non-negative decimal numbers"#,
        ),
        (
            r#"{"ps": {" 1": "a:1"}}"#,
            r#"invalid task index " 1" in job 'ps': task indices must be non-negative decimal numbers"#,
        ),
        (
            r#"{"ps": {"1.0": "a:1"}}"#,
            r#"invalid task index "1.0" in job 'ps': task indices must be non-negative decimal numbers"#,
        ),
        (
            r#"{"ps": {"": "a:1"}}"#,
            r#"invalid task index "" in job 'ps': task indices must be non-negative decimal numbers"#,
        ),
        (
            r#"{"ps": {"2147483648": "a:1"}}"#,
            r#"invalid task index "2147483648" in job 'ps': task indices must be at most 2147483647"#,
        ),
        (
            r#"{"ps": {"99999999999999999999999": "a:1"}}"#,
            r#"invalid task index "99999999999999999999999" in job 'ps': task indices must be at most 2147483647"#,
        ),
    ] {
        assert_eq!(err(json), message, "{json}");
    }
}

#[test]
fn duplicate_jobs_are_errors() {
    assert_eq!(
        err(r#"{"w": ["a:1"], "ps": ["b:1"], "w": ["c:1"]}"#),
        "Duplicate job ID in cluster specification: w"
    );
    let def = ClusterDef {
        job: vec![
            JobDef {
                name: "w".into(),
                tasks: [(0, "a:1".into())].into(),
            },
            JobDef {
                name: "w".into(),
                tasks: [(1, "b:1".into())].into(),
            },
        ],
    };
    assert_eq!(
        ClusterSpec::try_from(def).unwrap_err(),
        Error::DuplicateJob { job: "w".into() }
    );
}

#[test]
fn job_names_follow_the_device_name_grammar() {
    for name in ["1worker", "", "wor-ker", "w x", "_w", "wörker"] {
        let json = serde_json::json!({ name: ["a:1"] }).to_string();
        let message = err(&json);
        assert!(
            message.starts_with(&format!("invalid job name {name:?}")),
            "{message}"
        );
    }
    assert_eq!(
        err(r#"{"1x": []}"#),
        r#"invalid job name "1x": job names must start with a letter, not '1'"#
    );
    assert_eq!(
        err(r#"{"a-b": []}"#),
        r#"invalid job name "a-b": job names may hold only letters, digits and '_', not '-' (at byte 1)"#
    );
}

#[test]
fn addresses_are_host_port() {
    for ok in [
        "localhost:0",
        "[::1]:2222",
        "[fe80::1%eth0]:1",
        "10.1.2.3:65535",
        "a_b.c-d:1",
    ] {
        let s = spec(&serde_json::json!({ "w": [ok] }).to_string());
        assert_eq!(s.task_address("w", 0).unwrap(), ok);
    }
    for (address, reason) in [
        ("localhost", "no port: an address must be host:port"),
        ("", "an address must be host:port, not empty"),
        ("h:65536", "the port must be from 0 to 65535"),
        ("h:", "the port must be a decimal number"),
        (":1", "the host before ':' is empty"),
        ("::1:80", "the host before ':' is empty"),
        (
            "fe80::1:2222",
            "more than one ':' (an IPv6 host goes in brackets: [::1]:8470)",
        ),
        (
            "/bns/cell/job:1",
            "'/' is not allowed in a host name (letters, digits, '.', '-', '_'; IPv6 in brackets)",
        ),
        ("grpc://h:1", "the port must be a decimal number"),
        ("h:1 ", "unexpected ' ' after the port"),
        ("[::g]:1", "the bracketed host is not an IPv6 address"),
        (
            "hé:1",
            "byte 0xc3 is not allowed in a host name (letters, digits, '.', '-', '_'; IPv6 in brackets)",
        ),
    ] {
        let json = serde_json::json!({ "w": ["ok:1", address] }).to_string();
        assert_eq!(
            err(&json),
            format!("invalid address {address:?} for task 1 of job 'w': {reason}"),
            "{address}"
        );
    }
    // Through the builder and ClusterDef too: one rule for every input.
    let e = ClusterSpec::builder()
        .sparse_job("ps", [(7, "nope")])
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"invalid address "nope" for task 7 of job 'ps': no port: an address must be host:port"#
    );
}

#[test]
fn escaped_json_strings_are_decoded_then_validated() {
    let s = spec(r#"{"w\u006fr": ["h\u002ex:1", "a\/b:1"]}"#.replace("a\\/b:1", "ab:1").as_str());
    assert_eq!(s.jobs(), ["wor"]);
    assert_eq!(s.task_address("wor", 0).unwrap(), "h.x:1");
    assert!(err(r#"{"w": ["a\nb:1"]}"#).contains(r#"invalid address "a\nb:1""#));
}

#[test]
fn json_syntax_errors_say_where() {
    for (json, message) in [
        (
            "",
            "invalid cluster JSON at line 1, column 1: expected a JSON object mapping job names to tasks, found the end of the input",
        ),
        (
            "[]",
            "invalid cluster JSON at line 1, column 1: expected a JSON object mapping job names to tasks, found a list",
        ),
        (
            "{\n  \"w\": [\"a:1\",]\n}",
            "invalid cluster JSON at line 2, column 15: expected an address string for task 1, found ']'",
        ),
        (
            r#"{"w": ["a:1"]} x"#,
            "invalid cluster JSON at line 1, column 16: expected the end of the input after the cluster object, found an unexpected character",
        ),
        (
            r#"{"w": ["a:1"}"#,
            "invalid cluster JSON at line 1, column 13: expected ',' or ']' after an address, found '}'",
        ),
        (
            r#"{"w": ["a:1"#,
            "invalid cluster JSON at line 1, column 12: unterminated string",
        ),
        (
            r#"{"w": [null]}"#,
            "invalid cluster JSON at line 1, column 8: expected an address string for task 0, found null",
        ),
        (
            r#"{"w" ["a:1"]}"#,
            "invalid cluster JSON at line 1, column 6: expected ':' after the job name, found a list",
        ),
        (
            r#"{"w": ["\ud800:1"]}"#,
            "invalid cluster JSON at line 1, column 9: unpaired surrogate in \\u escape",
        ),
    ] {
        assert_eq!(err(json), message, "{json}");
    }
    assert_eq!(
        err(r#"{"w": 5}"#),
        "The tasks for job 'w' must be a list or a dictionary from integers to strings (found a number)."
    );
}

#[test]
fn cluster_def_conversion() {
    // TF 2.21: ClusterSpec({"w": ["a:1"], "ps": {2: "b:2"}}).as_cluster_def().SerializeToString()
    let golden = unhex("0a0d0a027073120708021203623a320a0c0a0177120708001203613a31");
    let from_tf = ClusterSpec::decode_cluster_def(&golden).unwrap();
    let expected = spec(r#"{"w": ["a:1"], "ps": {"2": "b:2"}}"#);
    assert_eq!(from_tf, expected);
    // TF keeps the proto's job order for jobs() of a spec built from a ClusterDef.
    assert_eq!(from_tf.jobs(), ["ps", "w"]);
    // Ours differs only in omitting the default map key 0 (`08 00`), which proto3 allows.
    let ours = expected.encode_cluster_def();
    assert_eq!(
        ours,
        unhex("0a0d0a027073120708021203623a320a0a0a017712051203613a31")
    );
    assert_eq!(ClusterSpec::decode_cluster_def(&ours).unwrap(), expected);

    let negative = ClusterDef {
        job: vec![JobDef {
            name: "w".into(),
            tasks: [(-1, "a:1".into())].into(),
        }],
    };
    assert_eq!(
        ClusterSpec::try_from(negative).unwrap_err().to_string(),
        r#"invalid task index "-1" in job 'w': task indices must be non-negative"#
    );
    assert!(matches!(
        ClusterSpec::decode_cluster_def(&[0x0a, 0x05]),
        Err(Error::Decode { .. })
    ));
}

#[test]
fn builder_reports_the_first_error_and_keeps_order() {
    let e = ClusterSpec::builder()
        .job("worker", ["a:1"])
        .job("bad-name", ["b:1"])
        .job("ps", ["nope"])
        .build()
        .unwrap_err();
    assert!(
        matches!(e, Error::InvalidJobName { ref name, .. } if name == "bad-name"),
        "{e}"
    );
    let e = ClusterSpec::builder()
        .sparse_job("ps", [(1, "a:1"), (1, "b:1")])
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"job 'ps' specifies two addresses for task 1: "a:1" and "b:1""#
    );
    let sparse = ClusterSpec::builder()
        .sparse_job("ps", [(i32::MAX as u32, "a:1")])
        .build()
        .unwrap();
    assert_eq!(
        sparse.job_tasks("ps").unwrap_err().to_string(),
        "job 'ps' is too sparse to list by index (highest index 2147483647 for 1 tasks); iterate tasks() instead"
    );
    let e = ClusterSpec::builder()
        .sparse_job("ps", [(1u32 << 31, "a:1")])
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"invalid task index "2147483648" in job 'ps': task indices must be at most 2147483647"#
    );
}

#[test]
fn serde_embeds_in_larger_documents() {
    #[derive(serde::Deserialize)]
    struct TfConfig {
        cluster: ClusterSpec,
    }
    let config: TfConfig =
        serde_json::from_str(r#"{"cluster": {"worker": ["a:1"], "ps": {"1": "b:1"}}, "task": {}}"#)
            .unwrap();
    assert_eq!(config.cluster.jobs(), ["worker", "ps"]);
    let e = serde_json::from_str::<TfConfig>(r#"{"cluster": {"worker": ["a"]}}"#)
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .contains(r#"invalid address "a" for task 0 of job 'worker'"#),
        "{e}"
    );
}
