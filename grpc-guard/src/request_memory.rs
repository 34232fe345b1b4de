//! A server's memory budgets: the bytes it holds for requests being received and decoded,
//! all connections together ([`Limits::request_memory`](crate::Limits::request_memory)), and
//! the bytes of responses its connections have not taken yet
//! ([`Limits::response_memory`](crate::Limits::response_memory), charged by
//! [`delivery`](crate::delivery)).
//!
//! Each request charges what it makes the server hold: its bytes as they arrive, its inflated
//! bytes when it was compressed, and what decoding it allocates beyond its bytes (one record
//! per device of a device list). A charge that does not fit fails that request with
//! `RESOURCE_EXHAUSTED` at once rather than waiting: waiting would let a few slow requests
//! hold everyone else's share. The charge is given back when the request is dropped.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::Status;
use tonic::metadata::MetadataValue;

use crate::metrics::GuardMetrics;

/// A budget of bytes, one permit per byte: the request memory of a server, or its response
/// memory. Cheap to clone (clones share the budget).
#[derive(Clone, Debug)]
pub struct RequestMemory {
    permits: Arc<Semaphore>,
    total: usize,
    /// What the bytes are, for the error of a charge that does not fit.
    responses: bool,
    /// Counts the charges that did not fit.
    metrics: GuardMetrics,
}

impl RequestMemory {
    /// A request memory of `total` bytes.
    pub fn new(total: usize) -> Self {
        Self::budget(total, false)
    }

    /// A response memory of `total` bytes.
    pub(crate) fn for_responses(total: usize) -> Self {
        Self::budget(total, true)
    }

    fn budget(total: usize, responses: bool) -> Self {
        let total = total.min(Semaphore::MAX_PERMITS);
        Self {
            permits: Arc::new(Semaphore::new(total)),
            total,
            responses,
            metrics: GuardMetrics::default(),
        }
    }

    /// The same budget, its refused charges counted into `metrics`.
    pub(crate) fn counted_by(mut self, metrics: GuardMetrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// The bytes held now, all charges together.
    pub fn in_use(&self) -> usize {
        self.total - self.permits.available_permits()
    }

    /// The whole budget, in bytes.
    pub fn total(&self) -> usize {
        self.total
    }

    /// An empty charge against this budget.
    pub fn charge(&self) -> Charge {
        Charge {
            memory: self.clone(),
            held: None,
        }
    }
}

/// What one request (or response) holds of the budget; given back on drop.
#[derive(Debug)]
pub struct Charge {
    memory: RequestMemory,
    held: Option<OwnedSemaphorePermit>,
}

impl Charge {
    /// Holds `bytes` more, or fails with `RESOURCE_EXHAUSTED` saying what is held.
    ///
    /// # Errors
    ///
    /// `RESOURCE_EXHAUSTED` when the budget has less than `bytes` left.
    pub fn add(&mut self, bytes: usize) -> Result<(), Status> {
        if bytes == 0 {
            return Ok(());
        }
        let permit = u32::try_from(bytes)
            .ok()
            .and_then(|n| self.memory.permits.clone().try_acquire_many_owned(n).ok());
        match permit {
            Some(permit) => {
                self.absorb(Charge {
                    memory: self.memory.clone(),
                    held: Some(permit),
                });
                Ok(())
            }
            None => Err(self.exhausted(bytes)),
        }
    }

    /// Everything this charge holds, moved to a new charge (for work done elsewhere); this
    /// one goes on empty.
    pub fn split_off_all(&mut self) -> Charge {
        Charge {
            memory: self.memory.clone(),
            held: self.held.take(),
        }
    }

    /// Takes over what `other` holds.
    pub fn absorb(&mut self, mut other: Charge) {
        match (other.held.take(), &mut self.held) {
            (Some(permit), Some(held)) => held.merge(permit),
            (Some(permit), held @ None) => *held = Some(permit),
            (None, _) => {}
        }
    }

    /// Bytes this request holds.
    pub fn held(&self) -> usize {
        self.held
            .as_ref()
            .map_or(0, OwnedSemaphorePermit::num_permits)
    }

    /// The last `bytes` of what this charge holds (all of it if it holds less), moved to a
    /// new charge.
    pub(crate) fn split_off(&mut self, bytes: usize) -> Charge {
        let held = self.held();
        let split = if bytes >= held {
            self.held.take()
        } else {
            self.held.as_mut().and_then(|permit| permit.split(bytes))
        };
        Charge {
            memory: self.memory.clone(),
            held: split,
        }
    }

    /// `RESOURCE_EXHAUSTED` for `bytes` more, with gRPC's retry pushback: memory comes back
    /// as other calls end, so a client may try again ([`RETRY_PUSHBACK`]).
    fn exhausted(&self, bytes: usize) -> Status {
        self.memory.metrics.refused(if self.memory.responses {
            "response_memory"
        } else {
            "request_memory"
        });
        let mut status = self.exhausted_status(bytes);
        status.metadata_mut().insert(
            PUSHBACK_HEADER,
            MetadataValue::from(RETRY_PUSHBACK.as_millis() as u64),
        );
        status
    }

    fn exhausted_status(&self, bytes: usize) -> Status {
        let total = self.memory.total;
        let in_use = self.memory.in_use();
        if self.memory.responses {
            return Status::resource_exhausted(format!(
                "the server cannot send this response: it needs {bytes} bytes, and responses \
                 its connections have not taken yet hold {in_use} of the server's {total} \
                 bytes (its response_memory limit)"
            ));
        }
        Status::resource_exhausted(format!(
            "the server cannot take this request: it needs {} more bytes (it holds {} already), \
             and requests being received and decoded hold {in_use} of the server's {total} bytes \
             (its request_memory limit)",
            bytes,
            self.held(),
        ))
    }
}

/// gRPC's trailer telling a client when it may retry a call refused for now
/// (`grpc-retry-pushback-ms`, from gRPC's retry design, A6).
pub const PUSHBACK_HEADER: &str = "grpc-retry-pushback-ms";

/// How long a client refused for want of request or response memory is asked to wait before
/// it tries again.
pub const RETRY_PUSHBACK: std::time::Duration = std::time::Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_add_up_to_the_budget_and_are_given_back_on_drop() {
        let memory = RequestMemory::new(1000);
        let mut a = memory.charge();
        a.add(600).unwrap();
        a.add(300).unwrap();
        assert_eq!(a.held(), 900);
        let mut b = memory.charge();
        let err = b.add(200).unwrap_err();
        assert_eq!(err.code(), tonic::Code::ResourceExhausted);
        assert!(
            err.message().contains("needs 200 more bytes")
                && err
                    .message()
                    .contains("hold 900 of the server's 1000 bytes"),
            "{}",
            err.message()
        );
        // A failed charge holds nothing more.
        assert_eq!(b.held(), 0);
        drop(a);
        b.add(1000).unwrap();
        // More than a u32 of bytes at once is more than any budget gives.
        assert!(b.add(usize::MAX).is_err());
    }
}
