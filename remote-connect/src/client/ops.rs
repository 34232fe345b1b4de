//! Running ops on remote devices: [`Context::execute`], [`Context::enqueue`] and [`Batch`],
//! over TensorFlow's unary `EagerService.Enqueue` (the client TensorFlow uses when
//! `TF_ENABLE_EAGER_CLIENT_STREAMING_ENQUEUE` is off).
//!
//! An op whose id is -1 (TensorFlow's `kInvalidOpId`) returns its outputs' values; any other id
//! leaves them on the task under `(id, output)`, and only their shapes come back.

use cluster_proto::DataType;
use cluster_proto::eager::{
    EnqueueRequest, Operation, QueueItem, QueueResponse, RemoteTensorHandle, operation, queue_item,
};
use device_filter::DeviceName;

use super::connection::{Snapshot, TaskLink};
use super::remote_tensor::handle_proto;
use super::{Context, Deadline, DeviceHandle, RemoteTensor, TaskChannel};
use crate::op::{Source, signature};
use crate::{Error, Input, Op, OpFailure, TaskError, TaskId, Tensor};

/// TensorFlow's `kInvalidOpId`: the op's outputs come back as values.
const RETURN_VALUES: i64 = -1;

/// Several ops sent together: ops on one task travel in one Enqueue round trip, in order, and
/// an op may take outputs of earlier ops of the batch ([`Pending::output`]) without their
/// values crossing the network. Ops on different tasks are sent one task's run after another,
/// in the order added.
///
/// ```no_run
/// # async fn f(ctx: remote_connect::Context) -> Result<(), remote_connect::Error> {
/// use remote_connect::{Op, Outputs, Tensor};
///
/// let worker = ctx.device("/job:worker/replica:0/task:0/device:CPU:0")?;
/// let a = Tensor::new(&[2, 2], vec![1.0f32, 2.0, 3.0, 4.0])?;
/// let mut batch = ctx.batch();
/// let product = batch.enqueue(&worker, Op::new("MatMul").input(&a).input(&a));
/// let scaled = batch.execute(&worker, Op::new("Mul").input(product.output(0)).input(Tensor::scalar(10.0f32)));
/// let outputs = batch.run().await?;
/// let Outputs::Values(values) = &outputs[scaled.index()] else { unreachable!() };
/// assert_eq!(values[0].to_vec::<f32>()?, [70.0, 100.0, 150.0, 220.0]);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Batch {
    ctx: Context,
    steps: Vec<Step>,
}

#[derive(Debug)]
struct Step {
    device: DeviceHandle,
    op: Op,
    op_id: i64,
    dtypes: Option<Vec<DataType>>,
}

/// An op added to a [`Batch`], before the batch runs.
#[derive(Clone, Debug)]
pub struct Pending {
    index: usize,
    op_id: i64,
    device: String,
    dtypes: Option<Vec<DataType>>,
}

impl Pending {
    /// Where the op's outputs are in [`Batch::run`]'s result.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Output `n` of the op as an input to a later op of the same batch. Only for ops added
    /// with [`Batch::enqueue`]: an executed op keeps nothing on the task.
    pub fn output(&self, n: usize) -> Input {
        Input(Source::Pending {
            op_id: self.op_id,
            output: i32::try_from(n).unwrap_or(i32::MAX),
            device: self.device.clone(),
            dtype: output_dtype(self.dtypes.as_deref(), n),
        })
    }
}

/// The outputs of one op of a batch.
#[derive(Clone, Debug)]
pub enum Outputs {
    /// Values, for an op run with [`Batch::execute`].
    Values(Vec<Tensor>),
    /// Tensors left on the task, for an op run with [`Batch::enqueue`].
    Remote(Vec<RemoteTensor>),
}

impl Batch {
    /// Adds `op` on `device`, its outputs to come back as values.
    pub fn execute(&mut self, device: &DeviceHandle, op: Op) -> Pending {
        self.add(device, op, RETURN_VALUES)
    }

    /// Adds `op` on `device`, its outputs to stay there.
    pub fn enqueue(&mut self, device: &DeviceHandle, op: Op) -> Pending {
        let id = self.ctx.next_op_id();
        self.add(device, op, id)
    }

    /// How many ops the batch holds.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether the batch holds no op.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    fn add(&mut self, device: &DeviceHandle, mut op: Op, op_id: i64) -> Pending {
        let dtypes = match op.called_function() {
            Some(f) => Some(f.signature().outputs.iter().map(|a| a.dtype).collect()),
            None => {
                let inputs: Vec<DataType> = op
                    .inputs()
                    .iter()
                    .map(|i| i.dtype().unwrap_or(DataType::DtInvalid))
                    .collect();
                let completion = signature::complete(op.name(), op.attrs(), &inputs);
                for (name, value) in completion.attrs {
                    op = op.attr(name, value);
                }
                completion.outputs
            }
        };
        let pending = Pending {
            index: self.steps.len(),
            op_id,
            device: device.name().to_owned(),
            dtypes: dtypes.clone(),
        };
        self.steps.push(Step {
            device: device.clone(),
            op,
            op_id,
            dtypes,
        });
        pending
    }

    /// Sends the batch: one Enqueue per run of consecutive ops on the same task, each under
    /// the connect's `rpc_timeout`. Returns every op's outputs in the order added.
    ///
    /// # Errors
    ///
    /// [`Error::Op`] with TensorFlow's status code and message when a task refuses or fails an
    /// op (an unknown op or function, a wrong attribute, a shape mismatch, an `unknown
    /// device` hidden by device filters) or a function's registration; the context stays
    /// usable, and ops of earlier runs have run. [`Error::Function`] for a function call whose
    /// inputs do not fit its signature, before anything is sent.
    /// [`Error::StaleDevice`] and [`Error::StaleTensor`] for handles from before a full
    /// reconnect ([`Error::StaleDevice`] also for a device whose task an update removed);
    /// [`Error::LocalDevice`] for this process's own devices.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: a dropped run may have sent some of its Enqueues, whose ops may or may
    /// not have run on their tasks; what they kept there, and the releases of dropped
    /// [`RemoteTensor`]s that rode along, are freed when the context closes. The context
    /// itself stays usable; a function registration dropped in flight counts as not done, so
    /// a concurrent call waiting for it, or the next call, sends it again (harmless).
    pub async fn run(self) -> Result<Vec<Outputs>, Error> {
        let snapshot = self.ctx.snapshot();
        if snapshot.context_id == 0 {
            return Err(Error::NotConnected);
        }
        let mut targets = Vec::with_capacity(self.steps.len());
        for step in &self.steps {
            if let Some(function) = step.op.called_function() {
                let inputs: Vec<_> = step.op.inputs().iter().map(Input::dtype).collect();
                function.signature().check(&inputs)?;
            }
            targets.push(target(&snapshot, &step.device)?);
        }
        let mut outputs = Vec::with_capacity(self.steps.len());
        let mut start = 0;
        while start < self.steps.len() {
            let link = &targets[start];
            let end = start
                + targets[start..]
                    .iter()
                    .take_while(|l| l.task == link.task)
                    .count();
            let run = &self.steps[start..end];
            outputs.extend(self.send(&snapshot, link, run).await?);
            start = end;
        }
        Ok(outputs)
    }

    async fn send(
        &self,
        snapshot: &Snapshot,
        link: &TaskLink,
        run: &[Step],
    ) -> Result<Vec<Outputs>, Error> {
        let task = &link.task;
        let context_id = snapshot.context_id;
        for function in run.iter().filter_map(|s| s.op.called_function()) {
            self.ctx.ensure_registered(snapshot, task, function).await?;
        }
        let mut queue = self.ctx.releases().take(context_id, task);
        let releases = queue.len();
        for step in run {
            queue.push(QueueItem {
                item: Some(queue_item::Item::Operation(operation(step, context_id)?)),
            });
        }
        let responses = enqueue(&link.channel, context_id, queue, snapshot)
            .await
            .map_err(|error| {
                let ops = run.iter().map(|s| s.op.name().to_owned()).collect();
                op_failure(link, ops, error)
            })?;
        if responses.len() != releases + run.len() {
            return Err(Error::BadResponse(format!(
                "{task} answered {} queue items of {}",
                responses.len(),
                releases + run.len()
            )));
        }
        run.iter()
            .zip(responses.into_iter().skip(releases))
            .map(|(step, response)| self.outputs(step, task, context_id, response))
            .collect()
    }

    fn outputs(
        &self,
        step: &Step,
        task: &TaskId,
        context_id: u64,
        response: QueueResponse,
    ) -> Result<Outputs, Error> {
        if step.op_id == RETURN_VALUES {
            let values = response
                .tensor
                .into_iter()
                .map(Tensor::from_proto_owned)
                .collect::<Result<_, _>>()?;
            return Ok(Outputs::Values(values));
        }
        let mut kept = Vec::with_capacity(response.shape.len());
        for (n, shape) in response.shape.iter().enumerate() {
            kept.push(RemoteTensor::new(
                self.ctx.clone(),
                context_id,
                task.clone(),
                step.op_id,
                i32::try_from(n).unwrap_or(i32::MAX),
                step.device.name().to_owned(),
                output_dtype(step.dtypes.as_deref(), n),
                crate::tensor::shape_of(Some(shape))?,
            ));
        }
        Ok(Outputs::Remote(kept))
    }
}

/// The task that runs ops on `device`.
pub(super) fn target(snapshot: &Snapshot, device: &DeviceHandle) -> Result<TaskLink, Error> {
    snapshot.attributes(device)?;
    let parsed: DeviceName = device.name().parse()?;
    let task = TaskId::new(
        parsed.job().unwrap_or_default(),
        parsed.task().unwrap_or_default(),
    );
    if snapshot.local_task.as_ref() == Some(&task) {
        return Err(Error::LocalDevice(device.name().to_owned()));
    }
    snapshot
        .members
        .get(&task)
        .map(|m| m.link(&task))
        .ok_or_else(|| Error::UnknownDevice(device.name().to_owned()))
}

fn operation(step: &Step, context_id: u64) -> Result<Operation, Error> {
    let mut op_inputs = Vec::with_capacity(step.op.inputs().len());
    for input in step.op.inputs() {
        let item = match &input.0 {
            Source::Value(t) => operation::input::Item::Tensor(t.to_proto()),
            Source::Remote(t) => {
                t.check_current(context_id)?;
                operation::input::Item::RemoteHandle(t.proto())
            }
            Source::Pending {
                op_id,
                output,
                device,
                dtype,
            } => {
                operation::input::Item::RemoteHandle(handle_proto(*op_id, *output, device, *dtype))
            }
        };
        op_inputs.push(operation::Input { item: Some(item) });
    }
    Ok(Operation {
        id: step.op_id,
        name: step.op.name().to_owned(),
        op_inputs,
        attrs: step.op.attrs().clone(),
        device: step.device.name().to_owned(),
        is_function: step.op.called_function().is_some(),
        ..Operation::default()
    })
}

/// Output `n`'s dtype, when the op's signature determined it.
fn output_dtype(dtypes: Option<&[DataType]>, n: usize) -> Option<DataType> {
    dtypes
        .and_then(|d| d.get(n).copied())
        .filter(|d| *d != DataType::DtInvalid)
}

/// `ops` failed on `link`'s task.
pub(super) fn op_failure(link: &TaskLink, ops: Vec<String>, error: TaskError) -> Error {
    Error::Op(Box::new(OpFailure {
        task: link.task.clone(),
        address: link.address.clone(),
        ops,
        error,
    }))
}

/// One Enqueue under the connect's `rpc_timeout`.
pub(super) async fn enqueue(
    channel: &TaskChannel,
    context_id: u64,
    queue: Vec<QueueItem>,
    snapshot: &Snapshot,
) -> Result<Vec<QueueResponse>, TaskError> {
    let deadline = Deadline::new(snapshot.rpc_timeout, snapshot.rpc_timeout, 1);
    let mut eager = channel.eager.clone();
    let response = deadline
        .run(
            "Enqueue",
            eager.enqueue(EnqueueRequest { context_id, queue }),
        )
        .await?;
    Ok(response.queue_response)
}

impl Context {
    /// A batch of ops to send together ([`Batch`]).
    pub fn batch(&self) -> Batch {
        Batch {
            ctx: self.clone(),
            steps: Vec::new(),
        }
    }

    /// Runs `op` on `device` and returns its outputs' values (one Enqueue round trip).
    ///
    /// ```no_run
    /// # async fn f(ctx: remote_connect::Context) -> Result<(), remote_connect::Error> {
    /// use remote_connect::{Op, Tensor};
    ///
    /// let worker = ctx.device("/job:worker/replica:0/task:0/device:CPU:0")?;
    /// let x = Tensor::vector(vec![1.0f32, 2.0]);
    /// let sum = ctx.execute(&worker, Op::new("AddV2").input(&x).input(&x)).await?;
    /// assert_eq!(sum[0].to_vec::<f32>()?, [2.0, 4.0]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Batch::run`].
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe, as [`Batch::run`]: a dropped call may have run the op.
    pub async fn execute(&self, device: &DeviceHandle, op: Op) -> Result<Vec<Tensor>, Error> {
        let mut batch = self.batch();
        batch.execute(device, op);
        match batch.run().await?.pop() {
            Some(Outputs::Values(values)) => Ok(values),
            _ => Err(Error::BadResponse("Enqueue returned no outputs".into())),
        }
    }

    /// Runs `op` on `device`, leaving its outputs there as [`RemoteTensor`]s.
    ///
    /// # Errors
    ///
    /// As [`Batch::run`].
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe, as [`Batch::run`]: a dropped call may have run the op, and its
    /// outputs then stay on the task until the context closes.
    pub async fn enqueue(&self, device: &DeviceHandle, op: Op) -> Result<Vec<RemoteTensor>, Error> {
        let mut batch = self.batch();
        batch.enqueue(device, op);
        match batch.run().await?.pop() {
            Some(Outputs::Remote(kept)) => Ok(kept),
            _ => Err(Error::BadResponse("Enqueue returned no outputs".into())),
        }
    }

    /// Sends the releases waiting for `task` now, with `handle` among them.
    pub(crate) async fn release_now(
        &self,
        context_id: u64,
        task: &TaskId,
        handle: RemoteTensorHandle,
    ) -> Result<(), Error> {
        let snapshot = self.snapshot();
        if snapshot.context_id != context_id {
            // The context that held it is closed or replaced, which freed it.
            return Ok(());
        }
        self.releases().push(context_id, task.clone(), handle);
        let Some(member) = snapshot.members.get(task) else {
            return Ok(());
        };
        let queue = self.releases().take(context_id, task);
        enqueue(&member.remote.channel, context_id, queue, &snapshot)
            .await
            .map(drop)
            .map_err(|error| op_failure(&member.link(task), Vec::new(), error))
    }
}
