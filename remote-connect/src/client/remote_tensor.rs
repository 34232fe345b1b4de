//! [`RemoteTensor`]: an op's output kept on the task that computed it.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cluster_proto::DataType;
use cluster_proto::eager::RemoteTensorHandle;

use super::Context;
use crate::ids::Hex;
use crate::{Error, TaskId};

/// An output of an op run with [`Context::enqueue`] (or [`Batch::enqueue`](super::Batch::enqueue)),
/// left on the task that computed it. It can be an input to later ops on any task that may
/// see its device, is read with [`fetch`](Self::fetch), and is freed on its task when the last
/// clone is dropped (the release rides with the next Enqueue to that task) or at once with
/// [`release`](Self::release).
///
/// Like a [`DeviceHandle`](super::DeviceHandle), it is valid until the next full reconnect.
#[derive(Clone)]
pub struct RemoteTensor {
    inner: Arc<Handle>,
}

struct Handle {
    ctx: Context,
    context_id: u64,
    task: TaskId,
    op_id: i64,
    output: i32,
    device: String,
    dtype: Option<DataType>,
    shape: Vec<u64>,
    released: AtomicBool,
}

impl RemoteTensor {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        ctx: Context,
        context_id: u64,
        task: TaskId,
        op_id: i64,
        output: i32,
        device: String,
        dtype: Option<DataType>,
        shape: Vec<u64>,
    ) -> Self {
        Self {
            inner: Arc::new(Handle {
                ctx,
                context_id,
                task,
                op_id,
                output,
                device,
                dtype,
                shape,
                released: AtomicBool::new(false),
            }),
        }
    }

    /// The context that made the tensor.
    pub(super) fn context(&self) -> &Context {
        &self.inner.ctx
    }

    /// The device holding the tensor.
    pub fn device(&self) -> &str {
        &self.inner.device
    }

    /// The element type, as TensorFlow's op registry defines the op's output (or a
    /// [`Function`](crate::Function)'s signature); `None` for an op the registry does not know
    /// or whose output type was not determined by what was sent. Such a tensor can still be
    /// fetched and used on its own task.
    pub fn dtype(&self) -> Option<DataType> {
        self.inner.dtype
    }

    /// The shape the task reported.
    pub fn shape(&self) -> &[u64] {
        &self.inner.shape
    }

    /// The id of the op that produced it, which names it on its task with
    /// [`output`](Self::output).
    pub fn op_id(&self) -> i64 {
        self.inner.op_id
    }

    /// Which output of that op it is.
    pub fn output(&self) -> i32 {
        self.inner.output
    }

    /// The task holding the tensor.
    pub fn task(&self) -> &TaskId {
        &self.inner.task
    }

    /// The remote context the tensor lives in.
    pub fn context_id(&self) -> u64 {
        self.inner.context_id
    }

    /// Frees the tensor on its task now, for every clone (later use is an error).
    ///
    /// # Errors
    ///
    /// [`Error::Op`] when the task cannot be told; the tensor is still freed when its context
    /// closes.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: the tensor counts as released from the first poll; dropped before its
    /// Enqueue was sent, it is freed only when its context closes.
    pub async fn release(self) -> Result<(), Error> {
        if self.inner.released.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.inner
            .ctx
            .release_now(self.inner.context_id, &self.inner.task, self.proto())
            .await
    }

    /// The handle TensorFlow's protocol names this tensor by.
    pub(crate) fn proto(&self) -> RemoteTensorHandle {
        self.inner.proto()
    }

    /// Fails for a tensor of an older context or one released.
    pub(crate) fn check_current(&self, context_id: u64) -> Result<(), Error> {
        let h = &self.inner;
        if h.context_id != context_id || h.released.load(Ordering::Acquire) {
            return Err(Error::StaleTensor {
                device: h.device.clone(),
                op_id: h.op_id,
                output: h.output,
                tensor_context: h.context_id,
                current_context: context_id,
            });
        }
        Ok(())
    }
}

impl Handle {
    fn proto(&self) -> RemoteTensorHandle {
        handle_proto(self.op_id, self.output, &self.device, self.dtype)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        if !self.released.load(Ordering::Acquire) {
            let handle = self.proto();
            self.ctx
                .releases()
                .push(self.context_id, self.task.clone(), handle);
        }
    }
}

/// How TensorFlow's protocol names output `output` of op `op_id`, held on `device` (where the
/// op ran, too): for inputs, releases, and outputs of the same batch not yet made.
pub(crate) fn handle_proto(
    op_id: i64,
    output: i32,
    device: &str,
    dtype: Option<DataType>,
) -> RemoteTensorHandle {
    RemoteTensorHandle {
        op_id,
        output_num: output,
        device: device.to_owned(),
        op_device: device.to_owned(),
        dtype: dtype.unwrap_or(DataType::DtInvalid) as i32,
        resource_dtypes_and_shapes: Vec::new(),
    }
}

impl fmt::Debug for RemoteTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = &self.inner;
        f.debug_struct("RemoteTensor")
            .field("device", &h.device)
            .field("op_id", &h.op_id)
            .field("output", &h.output)
            .field("dtype", &h.dtype)
            .field("shape", &h.shape)
            .field("context_id", &format_args!("{}", Hex(h.context_id)))
            .finish()
    }
}
