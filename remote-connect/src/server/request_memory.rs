//! The bytes a server holds for requests being received and decoded, all connections
//! together ([`Limits::request_memory`](crate::Limits::request_memory)).
//!
//! Each request charges what it makes the server hold: its bytes as they arrive, its inflated
//! bytes when it was compressed, and what decoding it allocates beyond its bytes (one record
//! per device of a device list). A charge that does not fit fails that request with
//! `RESOURCE_EXHAUSTED` at once rather than waiting: waiting would let a few slow requests
//! hold everyone else's share. The charge is given back when the request is dropped.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::Status;

/// The budget: one permit per byte.
#[derive(Clone, Debug)]
pub(crate) struct RequestMemory {
    permits: Arc<Semaphore>,
    total: usize,
}

impl RequestMemory {
    pub(crate) fn new(total: usize) -> Self {
        let total = total.min(Semaphore::MAX_PERMITS);
        Self {
            permits: Arc::new(Semaphore::new(total)),
            total,
        }
    }

    /// The whole budget, in bytes.
    pub(crate) fn total(&self) -> usize {
        self.total
    }

    /// An empty charge against this budget.
    pub(crate) fn charge(&self) -> Charge {
        Charge {
            memory: self.clone(),
            held: None,
        }
    }
}

/// What one request holds of the budget; given back on drop.
#[derive(Debug)]
pub(crate) struct Charge {
    memory: RequestMemory,
    held: Option<OwnedSemaphorePermit>,
}

impl Charge {
    /// Holds `bytes` more, or fails with `RESOURCE_EXHAUSTED` saying what is held.
    pub(crate) fn add(&mut self, bytes: usize) -> Result<(), Status> {
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
    pub(crate) fn split_off_all(&mut self) -> Charge {
        Charge {
            memory: self.memory.clone(),
            held: self.held.take(),
        }
    }

    /// Takes over what `other` holds.
    pub(crate) fn absorb(&mut self, mut other: Charge) {
        match (other.held.take(), &mut self.held) {
            (Some(permit), Some(held)) => held.merge(permit),
            (Some(permit), held @ None) => *held = Some(permit),
            (None, _) => {}
        }
    }

    /// Bytes this request holds.
    pub(crate) fn held(&self) -> usize {
        self.held
            .as_ref()
            .map_or(0, OwnedSemaphorePermit::num_permits)
    }

    fn exhausted(&self, bytes: usize) -> Status {
        let total = self.memory.total;
        let in_use = total - self.memory.permits.available_permits();
        Status::resource_exhausted(format!(
            "the server cannot take this request: it needs {} more bytes (it holds {} already), \
             and requests being received and decoded hold {in_use} of the server's {total} bytes \
             (its request_memory limit)",
            bytes,
            self.held(),
        ))
    }
}

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
