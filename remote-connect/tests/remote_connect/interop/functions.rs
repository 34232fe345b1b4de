//! TensorFlow functions traced in Python, serialized to files, registered and run from Rust
//! on real TensorFlow 2.21 workers: outputs equal to Python calling the same `tf.function` on
//! the same cluster, inputs kept on the workers, device filters, typed errors, one
//! registration for many calls, and latency beside Python's.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use cluster_proto::DataType;
use cluster_spec::ClusterSpec;
use device_filter::ClusterDeviceFilters;
use remote_connect::{
    ConnectOptions, Context, DeviceHandle, Error, Function, FunctionError, Op, Outputs, TaskId,
    Tensor,
};
use tf_oracle::{Process, STARTUP};

use super::ops::{W0, W1, connect, status};
use super::{blocking, counting_proxy, tf_cluster};

/// Traces the functions on the cluster of `argv[1]`, writes each one's `FunctionDef` and
/// library to `argv[2]/<name>.fdef|.lib`, prints what calling each under
/// `tf.device(worker 1)` returns (`RESULTS`, each output as `print` shows it), then times
/// rounds read from stdin (`CALLS`, an empty line ends).
const TF_FUNCTIONS: &str = r#"
import json, os, sys, time
import tensorflow as tf
tf.config.experimental_connect_to_cluster(tf.train.ClusterSpec(json.loads(sys.argv[1])))
out_dir = sys.argv[2]

@tf.function
def chain(a, b):
    m = tf.linalg.matmul(a, b)
    m = tf.linalg.matmul(m, b)
    return tf.linalg.matmul(m, a) * 0.5

@tf.function
def inner(a):
    return a * 2.0 + 1.0

@tf.function
def outer(x, y):
    return inner(x) + y

@tf.function
def mixed(n, s):
    return tf.strings.join([s, tf.strings.as_string(n * 2)])

@tf.function
def pair(x):
    return x + 1.0, tf.reduce_sum(x)

@tf.function
def sixteen(x):
    y = x
    for _ in range(16):
        y = tf.raw_ops.AddV2(x=y, y=x)
    return y

f32 = lambda v: tf.constant(v, dtype=tf.float32)
cases = {
    "chain": (chain, [f32([[1.0, 2.0], [3.0, 4.0]]), f32([[0.5, -1.0], [2.0, 0.25]])]),
    "outer": (outer, [f32([1.0, 2.0]), f32([3.0, 4.0])]),
    "mixed": (mixed, [tf.constant(21), tf.constant("answer=")]),
    "pair": (pair, [tf.TensorSpec([None], tf.float32), f32([1.0, 2.0, 3.0])]),
    "sixteen": (sixteen, [f32([1.0, 2.0])]),
}
results = {}
for name, (fn, args) in cases.items():
    specs = args[:1] if isinstance(args[0], tf.TensorSpec) else args
    values = args[1:] if isinstance(args[0], tf.TensorSpec) else args
    concrete = fn.get_concrete_function(*specs)
    with open(os.path.join(out_dir, name + ".fdef"), "wb") as f:
        f.write(concrete.function_def.SerializeToString())
    with open(os.path.join(out_dir, name + ".lib"), "wb") as f:
        f.write(concrete.graph.as_graph_def().library.SerializeToString())
    with tf.device("/job:worker/replica:0/task:1/device:CPU:0"):
        got = fn(*values)
    got = got if isinstance(got, tuple) else (got,)
    results[name] = [str(t) for t in got]
print("RESULTS", json.dumps(results), flush=True)

x = f32([1.0, 2.0])
with tf.device("/job:worker/replica:0/task:1/device:CPU:0"):
    while True:
        line = sys.stdin.readline()
        if not line.strip():
            break
        times = []
        for _ in range(int(line)):
            t = time.perf_counter(); sixteen(x).numpy(); times.append((time.perf_counter() - t) * 1000)
        print("CALLS", json.dumps(times), flush=True)
"#;

/// The traced functions, in files, and Python's process (kept for the latency rounds).
struct Traced {
    dir: PathBuf,
    python: Process,
    /// Python's results by function name.
    results: serde_json::Value,
}

impl Traced {
    fn new(spec: &ClusterSpec) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "tfcluster-functions-{}-{}",
            std::process::id(),
            spec.task_address("worker", 0).unwrap().replace(':', "_")
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut python = Process::spawn(TF_FUNCTIONS, &[&spec.to_json(), dir.to_str().unwrap()]);
        let results = blocking(|| python.expect("RESULTS", STARTUP));
        Self {
            dir,
            python,
            results: serde_json::from_str(&results).unwrap(),
        }
    }

    /// Function `name` read from its files as a user would: its `FunctionDef`, then its
    /// library.
    fn function(&self, name: &str) -> Function {
        let read = |ext: &str| std::fs::read(self.dir.join(format!("{name}.{ext}"))).unwrap();
        Function::from_function_def(&read("fdef"))
            .unwrap()
            .with_library(&read("lib"))
            .unwrap()
    }

    fn file(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.dir.join(name)).unwrap()
    }

    fn python_results(&self, name: &str) -> Vec<String> {
        serde_json::from_value(self.results[name].clone()).unwrap()
    }

    fn end(mut self) {
        blocking(|| self.python.send(""));
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn f32s(shape: &[u64], values: &[f32]) -> Tensor {
    Tensor::new(shape, values.to_vec()).unwrap()
}

/// Each case's inputs, as Python's `cases`.
fn inputs(name: &str) -> Vec<Tensor> {
    match name {
        "chain" => vec![
            f32s(&[2, 2], &[1.0, 2.0, 3.0, 4.0]),
            f32s(&[2, 2], &[0.5, -1.0, 2.0, 0.25]),
        ],
        "outer" => vec![f32s(&[2], &[1.0, 2.0]), f32s(&[2], &[3.0, 4.0])],
        "mixed" => vec![Tensor::scalar(21i32), Tensor::scalar("answer=".to_string())],
        "pair" => vec![f32s(&[3], &[1.0, 2.0, 3.0])],
        "sixteen" => vec![f32s(&[2], &[1.0, 2.0])],
        other => panic!("no case {other}"),
    }
}

fn call(function: &Function, inputs: &[Tensor]) -> Op {
    inputs
        .iter()
        .fold(Op::function(function), |op, t| op.input(t))
}

fn shown(tensors: &[Tensor]) -> Vec<String> {
    tensors.iter().map(ToString::to_string).collect()
}

const CASES: [&str; 5] = ["chain", "outer", "mixed", "pair", "sixteen"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn functions_traced_in_python_run_from_rust_as_in_python() {
    let (mut tf, spec) = tf_cluster(&[("worker", 2)]);
    let traced = Traced::new(&spec);
    let ctx = connect(&spec, None).await;
    let w0 = ctx.device(W0).unwrap();
    let w1 = ctx.device(W1).unwrap();

    let outer = traced.function("outer");
    assert_eq!(
        outer.signature().to_string(),
        format!("{}(x: float32, y: float32) -> (float32)", outer.name())
    );
    assert!(
        outer.name().starts_with("__inference_outer_"),
        "{}",
        outer.name()
    );
    let callees: Vec<&str> = outer
        .library()
        .function
        .iter()
        .map(|f| f.signature.as_ref().unwrap().name.as_str())
        .collect();
    assert!(
        callees.len() == 1 && callees[0].starts_with("__inference_inner_"),
        "{callees:?}"
    );
    let mixed = traced.function("mixed");
    let dtypes = |args: &[remote_connect::Arg]| args.iter().map(|a| a.dtype).collect::<Vec<_>>();
    assert_eq!(
        dtypes(&mixed.signature().inputs),
        [DataType::DtInt32, DataType::DtString]
    );
    assert_eq!(
        dtypes(&traced.function("pair").signature().outputs),
        [DataType::DtFloat, DataType::DtFloat]
    );

    for name in CASES {
        let function = traced.function(name);
        let theirs = traced.python_results(name);
        let inputs = inputs(name);
        // Values back, on either worker.
        for device in [&w1, &w0] {
            let ours = ctx.execute(device, call(&function, &inputs)).await.unwrap();
            assert_eq!(shown(&ours), theirs, "{name} on {}", device.name());
        }
        // Kept on the worker, dtypes from the signature, then fetched.
        let kept = ctx.enqueue(&w0, call(&function, &inputs)).await.unwrap();
        assert_eq!(kept.len(), theirs.len(), "{name}");
        let mut fetched = Vec::new();
        for (t, arg) in kept.iter().zip(&function.signature().outputs) {
            assert_eq!(t.dtype(), Some(arg.dtype), "{name}");
            fetched.push(t.fetch().await.unwrap());
        }
        assert_eq!(shown(&fetched), theirs, "{name} kept on worker 0");
    }

    // In a batch: one function's output feeds another's, and an op's, without leaving
    // worker 1; `pair` (traced for any length) takes `outer`'s result.
    let pair = traced.function("pair");
    let mut batch = ctx.batch();
    let o = batch.enqueue(&w1, call(&outer, &inputs("outer")));
    let p = batch.execute(&w1, Op::function(&pair).input(o.output(0)));
    let doubled = batch.execute(&w1, Op::new("AddV2").input(o.output(0)).input(o.output(0)));
    let outputs = batch.run().await.unwrap();
    let Outputs::Values(p) = &outputs[p.index()] else {
        panic!("{outputs:?}")
    };
    // outer: [1, 2] * 2 + 1 + [3, 4] = [6, 9].
    assert_eq!(p[0].to_vec::<f32>().unwrap(), [7.0, 10.0]);
    assert_eq!(p[1].to_vec::<f32>().unwrap(), [15.0]);
    let Outputs::Values(d) = &outputs[doubled.index()] else {
        panic!("{outputs:?}")
    };
    assert_eq!(d[0].to_vec::<f32>().unwrap(), [12.0, 18.0]);

    ctx.close().await.unwrap();
    traced.end();
    blocking(|| tf.send(""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn function_inputs_stay_on_workers_and_filters_hide_them() {
    let (mut tf, spec) = tf_cluster(&[("worker", 2)]);
    let traced = Traced::new(&spec);
    let chain = traced.function("chain");
    let [a, b] = <[Tensor; 2]>::try_from(inputs("chain")).unwrap();
    let theirs = traced.python_results("chain");

    // Worker 1 may not see worker 0.
    let mut filters = ClusterDeviceFilters::default();
    filters
        .set_device_filters("worker", 1, ["/job:worker/task:1"])
        .unwrap();
    let ctx = connect(&spec, Some(filters)).await;
    let w0 = ctx.device(W0).unwrap();
    let w1 = ctx.device(W1).unwrap();
    ctx.register_function(&TaskId::new("worker", 0), &chain)
        .await
        .unwrap();
    // `a` lives on worker 0 and is used there: its value never comes back to this process.
    let on_w0 = ctx
        .enqueue(&w0, Op::new("Identity").input(&a))
        .await
        .unwrap();
    let out = ctx
        .execute(&w0, Op::function(&chain).input(&on_w0[0]).input(&b))
        .await
        .unwrap();
    assert_eq!(shown(&out), theirs);
    // A function's kept output feeds the next call, on the worker.
    let kept = ctx
        .enqueue(&w0, Op::function(&chain).input(&on_w0[0]).input(&b))
        .await
        .unwrap();
    let again = ctx
        .execute(&w0, Op::function(&chain).input(&kept[0]).input(&b))
        .await
        .unwrap();
    let expected = ctx
        .execute(
            &w0,
            call(&chain, &[kept[0].fetch().await.unwrap(), b.clone()]),
        )
        .await
        .unwrap();
    assert_eq!(again, expected);

    // On worker 1 the same input is on a device hidden from it: TensorFlow's unknown device.
    let err = ctx
        .execute(&w1, Op::function(&chain).input(&on_w0[0]).input(&b))
        .await
        .unwrap_err();
    assert_eq!(
        status(&err),
        (
            tonic::Code::InvalidArgument,
            format!("{W0} unknown device.")
        )
    );
    // The context stays usable, and worker 1 runs the function on its own inputs.
    let out = ctx
        .execute(&w1, call(&chain, &[a.clone(), b.clone()]))
        .await
        .unwrap();
    assert_eq!(shown(&out), theirs);
    ctx.close().await.unwrap();

    // Without filters worker 1 fetches the input from worker 0 itself.
    let ctx = connect(&spec, None).await;
    let on_w0 = ctx
        .enqueue(&ctx.device(W0).unwrap(), Op::new("Identity").input(&a))
        .await
        .unwrap();
    let out = ctx
        .execute(
            &ctx.device(W1).unwrap(),
            Op::function(&chain).input(&on_w0[0]).input(&b),
        )
        .await
        .unwrap();
    assert_eq!(shown(&out), theirs);
    ctx.close().await.unwrap();
    traced.end();
    blocking(|| tf.send(""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn function_errors_are_typed_and_leave_the_context_usable() {
    let (mut tf, spec) = tf_cluster(&[("worker", 2)]);
    let traced = Traced::new(&spec);
    let ctx = connect(&spec, None).await;
    let w1 = ctx.device(W1).unwrap();
    let chain = traced.function("chain");
    let good = inputs("chain");
    let works = |ctx: &Context, w: &DeviceHandle| {
        let (ctx, w, chain, good) = (ctx.clone(), w.clone(), chain.clone(), good.clone());
        async move { ctx.execute(&w, call(&chain, &good)).await.unwrap() }
    };

    // Wrong inputs are refused before sending, naming the signature.
    let signature = chain.signature().to_string();
    assert!(
        signature.ends_with("(a: float32, b: float32) -> (float32)"),
        "{signature}"
    );
    let err = ctx
        .execute(&w1, call(&chain, &good[..1]))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Function(FunctionError::InputCount {
                expected: 2,
                given: 1,
                ..
            })
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!("{signature} takes 2 inputs, 1 given")
    );
    let err = ctx
        .execute(
            &w1,
            Op::function(&chain)
                .input(&good[0])
                .input(Tensor::new(&[2, 2], vec![1i32, 2, 3, 4]).unwrap()),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{signature}: input 1 (b) must be float32, not int32")
    );

    // A bad input TensorFlow finds: a vector where the function multiplies matrices.
    let vector = f32s(&[2], &[1.0, 2.0]);
    let err = ctx
        .execute(&w1, call(&chain, &[vector.clone(), vector]))
        .await
        .unwrap_err();
    assert_eq!(status(&err).0, tonic::Code::InvalidArgument, "{err}");
    works(&ctx, &w1).await;

    // An unregistered function: TensorFlow's NOT_FOUND.
    let err = ctx
        .execute(
            &w1,
            Op::new("__inference_never_registered_1").input(&good[0]),
        )
        .await
        .unwrap_err();
    let (code, message) = status(&err);
    assert_eq!(code, tonic::Code::NotFound);
    assert!(
        message.contains("__inference_never_registered_1"),
        "{message}"
    );
    // A function registered without the library it calls: TensorFlow does not find its
    // callee when it instantiates the call (an INTERNAL error in TensorFlow 2.21).
    let alone = Function::from_function_def(&traced.file("outer.fdef")).unwrap();
    assert!(alone.library().function.is_empty());
    let err = ctx
        .execute(&w1, call(&alone, &inputs("outer")))
        .await
        .unwrap_err();
    let (code, message) = status(&err);
    assert_eq!(code, tonic::Code::Internal, "{message}");
    assert!(
        message.starts_with("Can't find a function") && message.contains("f=__inference_inner_"),
        "{message}"
    );
    works(&ctx, &w1).await;

    // Malformed definitions: bytes that are none, refused here; a definition TensorFlow
    // refuses at registration (named after a primitive op), typed as an op's error.
    let err = Function::from_function_def(b"\xff\xff not a FunctionDef").unwrap_err();
    assert!(
        matches!(
            err,
            FunctionError::Decode {
                what: "FunctionDef",
                ..
            }
        ),
        "{err:?}"
    );
    let err = Function::from_library(&traced.file("outer.lib"), "nope").unwrap_err();
    assert!(matches!(err, FunctionError::NotInLibrary { .. }), "{err:?}");
    let mut def = chain.function_def().clone();
    def.signature.as_mut().unwrap().name = "MatMul".into();
    let clash = Function::from_proto(def, &Default::default()).unwrap();
    let err = ctx
        .register_function(&TaskId::new("worker", 1), &clash)
        .await
        .unwrap_err();
    assert_eq!(
        status(&err),
        (
            tonic::Code::InvalidArgument,
            "Cannot add function 'MatMul' because an op with the same name already exists.".into()
        )
    );
    assert!(
        err.to_string()
            .starts_with("RegisterFunction(MatMul) on /job:worker/replica:0/task:1"),
        "{err}"
    );
    works(&ctx, &w1).await;
    ctx.close().await.unwrap();
    traced.end();
    blocking(|| tf.send(""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_is_registered_once_per_context() {
    let (mut tf, spec) = tf_cluster(&[("worker", 2)]);
    let traced = Traced::new(&spec);
    // Our client reaches worker 0 through a proxy that counts what it sends.
    let (proxy, seen) = counting_proxy::start(spec.task_address("worker", 0).unwrap()).await;
    let w1_address = spec.task_address("worker", 1).unwrap().to_owned();
    let spec = ClusterSpec::builder()
        .job("worker", [proxy, w1_address])
        .build()
        .unwrap();
    let ctx = connect(&spec, None).await;
    let w0 = ctx.device(W0).unwrap();
    let outer = traced.function("outer");
    let x = inputs("outer");

    // Concurrent first calls: one registration.
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let (ctx, w0, outer, x) = (ctx.clone(), w0.clone(), outer.clone(), x.clone());
            tokio::spawn(async move { ctx.execute(&w0, call(&outer, &x)).await.unwrap() })
        })
        .collect();
    for c in calls {
        assert_eq!(c.await.unwrap()[0].to_vec::<f32>().unwrap(), [6.0, 9.0]);
    }
    // Registering again and 1,000 more calls: still one.
    ctx.register_function(&TaskId::new("worker", 0), &outer)
        .await
        .unwrap();
    for _ in 0..1000 {
        ctx.execute(&w0, call(&outer, &x)).await.unwrap();
    }
    {
        let seen = seen.lock().unwrap();
        assert_eq!(
            seen.registrations,
            [outer.name()],
            "with its library, in one item"
        );
        assert_eq!(seen.operations, 1008);
        assert_eq!(seen.enqueues, 1009);
    }
    // Wrong inputs send nothing.
    ctx.execute(&w0, call(&outer, &x[..1])).await.unwrap_err();
    assert_eq!(seen.lock().unwrap().enqueues, 1009);

    // An update in place keeps the registration; a full reset forgets it.
    ctx.connect_to_cluster(spec.clone(), ConnectOptions::default())
        .await
        .unwrap();
    assert_eq!(ctx.device(W0).unwrap(), w0, "an update in place");
    ctx.execute(&w0, call(&outer, &x)).await.unwrap();
    assert_eq!(seen.lock().unwrap().registrations.len(), 1);
    ctx.connect_to_cluster(
        spec.clone(),
        ConnectOptions::default().with_job_name("other"),
    )
    .await
    .unwrap();
    let w0 = ctx.device(W0).unwrap();
    let out = ctx.execute(&w0, call(&outer, &x)).await.unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), [6.0, 9.0]);
    assert_eq!(
        seen.lock().unwrap().registrations.len(),
        2,
        "registered again after a reset"
    );
    ctx.close().await.unwrap();
    traced.end();
    blocking(|| tf.send(""));
}

/// Calls of one latency round, and rounds; ours and Python's alternate.
const CALLS: usize = 20;
const ROUNDS: usize = 5;

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// A 16-op function called from Rust, beside Python calling the same `tf.function` on the
/// same remote device, and beside today's 16-op `Batch`; figures in `docs/benchmarks.md`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn function_latency_beside_python_tensorflow() {
    let (mut tf, spec) = tf_cluster(&[("worker", 2)]);
    let mut traced = Traced::new(&spec);
    let ctx = connect(&spec, None).await;
    let w1 = ctx.device(W1).unwrap();
    let sixteen = traced.function("sixteen");
    let x = f32s(&[2], &[1.0, 2.0]);
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1000.0;
    let (mut function, mut batch_times, mut python) = (Vec::new(), Vec::new(), Vec::new());
    ctx.register_function(&TaskId::new("worker", 1), &sixteen)
        .await
        .unwrap();
    for _ in 0..ROUNDS {
        for _ in 0..CALLS {
            let t = Instant::now();
            let out = ctx
                .execute(&w1, Op::function(&sixteen).input(&x))
                .await
                .unwrap();
            function.push(ms(t));
            assert_eq!(out[0].to_vec::<f32>().unwrap(), [17.0, 34.0]);
        }
        for _ in 0..CALLS {
            let t = Instant::now();
            let mut batch = ctx.batch();
            let mut last = batch.enqueue(&w1, Op::new("AddV2").input(&x).input(&x));
            for _ in 0..14 {
                last = batch.enqueue(&w1, Op::new("AddV2").input(last.output(0)).input(&x));
            }
            batch.execute(&w1, Op::new("AddV2").input(last.output(0)).input(&x));
            batch.run().await.unwrap();
            batch_times.push(ms(t));
        }
        let round: Vec<f64> = serde_json::from_str(&blocking(|| {
            traced.python.send(&CALLS.to_string());
            traced.python.expect("CALLS", Duration::from_secs(120))
        }))
        .unwrap();
        python.extend(round);
    }
    let (function, batch, python) = (median(function), median(batch_times), median(python));
    eprintln!(
        "16-op function, medians: Rust call {function:.2} ms | Python tf.function on the \
         remote device {python:.2} ms | Rust 16-op Batch {batch:.2} ms"
    );
    // Loose bounds: the figures go to docs/benchmarks.md; this catches a gross regression.
    assert!(
        function < python * 2.0 + 2.0,
        "function {function} ms vs Python {python} ms"
    );
    assert!(
        function < batch * 2.0 + 2.0,
        "function {function} ms vs Batch {batch} ms"
    );
    ctx.close().await.unwrap();
    traced.end();
    blocking(|| tf.send(""));
}
