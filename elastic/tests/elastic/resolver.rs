//! A round as a `ClusterResolver` and as `TF_CONFIG`.

use cluster_resolver::ClusterResolver;
use elastic::{JobConfig, Join};

use crate::common::{Backend, LAST_CALL, Rdzv, TIMEOUT, on_both_backends, round};

async fn a_round_resolves_like_its_tf_config(backend: Backend) {
    let rdzv = Rdzv::start(backend, LAST_CALL, TIMEOUT).await;
    let client = rdzv.client().await;
    let c = JobConfig::new("2".parse().unwrap(), 2)
        .unwrap()
        .with_layout("chief=1".parse().unwrap())
        .unwrap();
    let mut a = client
        .join(&Join::new("job", c.clone(), vec![22_000, 22_001]).with_host("10.0.0.1"))
        .await
        .unwrap();
    let mut b = client
        .join(&Join::new("job", c, vec![22_000, 22_001]).with_host("10.0.0.2"))
        .await
        .unwrap();
    let (_, rb) = tokio::join!(round(&client, &mut a), round(&client, &mut b));
    assert_eq!(
        rb.tf_config(1).unwrap(),
        r#"{"cluster":{"chief":["10.0.0.1:22000"],"worker":["10.0.0.1:22001","10.0.0.2:22000","10.0.0.2:22001"]},"task":{"type":"worker","index":2},"rpc_layer":"grpc"}"#
    );
    let resolver = rb.resolver(1).unwrap();
    assert_eq!(&resolver.cluster_spec().await.unwrap(), rb.cluster_spec());
    assert_eq!(
        (resolver.task_type().as_deref(), resolver.task_id()),
        (Some("worker"), Some(2))
    );
    assert_eq!(resolver.rpc_layer().as_deref(), Some("grpc"));
    assert_eq!(resolver.environment(), "");
    assert_eq!(
        resolver.master(None, None, None).await.unwrap(),
        "grpc://10.0.0.2:22001"
    );
    assert_eq!(
        resolver
            .master(Some("chief"), Some(0), Some(""))
            .await
            .unwrap(),
        "10.0.0.1:22000"
    );
    assert_eq!(
        rb.tf_config(2).unwrap_err().to_string(),
        "local task 2 is not in the round: this node runs 2 tasks"
    );
}

on_both_backends!(a_round_resolves_like_its_tf_config);
