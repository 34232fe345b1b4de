//! Made by `cargo xtask codegen` from docs/guide/rust.md: its rust blocks, in order, in one async
//! main. Edit the page, not this file.

// The page's layout, not rustfmt's: the crate is the page.
#[rustfmt::skip]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    use remote_connect::ConnectOptions;
    use remote_connect::Context;
    use cluster_resolver::watch;
    use cluster_resolver::watch::WatchOptions;
    use remote_connect::FollowEvent;
    use remote_connect::FollowOptions;
    use remote_connect::Op;
    use remote_connect::Tensor;
    use remote_connect::Function;

    // docs/guide/rust.md:17
    let spec = cluster_spec::ClusterSpec::from_json(r#"{"worker": ["localhost:2222"]}"#)?;
    let ctx = Context::new();
    ctx.connect_to_cluster(spec, ConnectOptions::default()).await?;
    for device in ctx.list_logical_devices() {
        println!("{}", device.name);
    }
    ctx.close().await?;

    // docs/guide/rust.md:35
    let changes = watch::file("cluster.json", WatchOptions::default());
    let follow = ctx.follow(changes, FollowOptions::default());
    let mut events = follow.subscribe();
    while let Ok(event) = events.recv().await {
        if let FollowEvent::Changed(change) = event {
            println!("added {:?}, removed {:?}, {} devices", change.added, change.removed, change.devices);
        }
    }

    // docs/guide/rust.md:54
    let w0 = ctx.device("/job:worker/replica:0/task:0/device:CPU:0")?;
    let w1 = ctx.device("/job:worker/replica:0/task:1/device:CPU:0")?;
    let a = Tensor::new(&[2, 2], vec![1.0f32, 2.0, 3.0, 4.0])?;
    let product = ctx.enqueue(&w0, Op::new("MatMul").input(&a).input(&a)).await?; // stays on worker 0
    let sum = ctx.execute(&w1, Op::new("AddV2").input(&product[0]).input(&a)).await?;
    println!("{}", sum[0]); // as TensorFlow prints it:
    // tf.Tensor(
    // [[ 8. 12.]
    //  [18. 26.]], shape=(2, 2), dtype=float32)

    // docs/guide/rust.md:81
    let f = Function::from_function_def(&std::fs::read("f.fdef")?)?.with_library(&std::fs::read("f.lib")?)?;
    println!("{}", f.signature()); // __inference_f_17(x: float32, y: float32) -> (float32)
    let out = ctx.execute(&w0, Op::function(&f).input(&a).input(&a)).await?;
    println!("{}", out[0]); // its one output, as TensorFlow prints it

    Ok(())
}
