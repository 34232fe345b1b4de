//! Compressed requests inflated by the server itself, each inflated byte charged to the
//! request's share of [`RequestMemory`](crate::RequestMemory) as it is made.
//!
//! tonic inflates a message into one buffer up to the decode limit, which is TensorFlow's
//! 2 GiB: deflate's ratio is about 1,000 to 1, so about 2 MB sent could make a server hold
//! 2 GiB, and a few of them at once several times that. TensorFlow's gRPC has that exposure.
//! Here a message inflates to [`MAX_INFLATED_SIZE`] at most, and only while the server's
//! request memory has room; tonic is handed the inflated message as if it had been sent
//! plain. Every request a TaskServer takes is small (a `CreateContext` for 10,000 tasks of 8
//! devices is about 8 MB; the rendezvous takes no compressed requests at all), so only a
//! hostile one reaches either bound.

use std::io::Write;

use bytes::{BufMut, Bytes, BytesMut};
use tonic::Status;
use tonic::codegen::http::HeaderMap;

use crate::request_memory::Charge;

/// The most one compressed message may inflate to: 64 MiB.
pub(crate) const MAX_INFLATED_SIZE: usize = 64 << 20;

/// The compressions gRPC peers use that a guarded service inflates (`grpc-encoding`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    Gzip,
    /// gRPC's `deflate` is zlib's format.
    Deflate,
}

impl Encoding {
    /// The encoding a request's headers name, taking the header away so that tonic sees the
    /// inflated messages as plain ones. `None` for plain requests, and for encodings left to
    /// tonic, which refuses them.
    pub(crate) fn take_from(headers: &mut HeaderMap) -> Option<Self> {
        let encoding = match headers.get("grpc-encoding")?.as_bytes() {
            b"gzip" => Self::Gzip,
            b"deflate" => Self::Deflate,
            _ => return None,
        };
        headers.remove("grpc-encoding");
        Some(encoding)
    }

    /// `compressed` (a message's payload) inflated to `limit` bytes at most
    /// ([`MAX_INFLATED_SIZE`] for requests), as a whole gRPC message with its 5-byte header
    /// (not compressed).
    pub(crate) fn inflate(
        self,
        compressed: &[u8],
        limit: usize,
        charge: &mut Charge,
    ) -> Result<Bytes, Status> {
        let mut out = BytesMut::new();
        out.put_bytes(0, 5);
        let sink = Sink {
            out: &mut out,
            limit,
            charge,
            failure: None,
        };
        let finished = match self {
            Self::Gzip => {
                let mut decoder = flate2::write::GzDecoder::new(sink);
                decoder
                    .write_all(compressed)
                    .and_then(|()| decoder.try_finish())
                    .map_err(|e| (e, decoder.get_mut().failure.take()))
            }
            Self::Deflate => {
                let mut decoder = flate2::write::ZlibDecoder::new(sink);
                decoder
                    .write_all(compressed)
                    .and_then(|()| decoder.try_finish())
                    .map_err(|e| (e, decoder.get_mut().failure.take()))
            }
        };
        match finished {
            Ok(()) => {}
            Err((_, Some(status))) => return Err(status),
            Err((error, None)) => {
                return Err(Status::internal(format!(
                    "Error decompressing: {error}, while receiving the request"
                )));
            }
        }
        let len = u32::try_from(out.len() - 5)
            .map_err(|_| Status::resource_exhausted("the inflated message is over 4 GiB"))?;
        out[1..5].copy_from_slice(&len.to_be_bytes());
        Ok(out.freeze())
    }
}

/// Where a decoder writes: the message, grown only while it is within `limit` and the charge
/// allows.
struct Sink<'a> {
    out: &'a mut BytesMut,
    limit: usize,
    charge: &'a mut Charge,
    /// Why writing stopped, for the status the request fails with.
    failure: Option<Status>,
}

impl Write for Sink<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let refuse = |sink: &mut Self, status: Status| {
            sink.failure = Some(status);
            Err(std::io::Error::other("refused"))
        };
        if self.out.len() - 5 + data.len() > self.limit {
            let limit = self.limit;
            return refuse(
                self,
                Status::resource_exhausted(format!(
                    "Error decompressing: size limit, of {limit} bytes, exceeded while \
                     decompressing message"
                )),
            );
        }
        if let Err(status) = self.charge.add(data.len()) {
            return refuse(self, status);
        }
        self.out.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request_memory::RequestMemory;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn inflates_gzip_and_zlib_into_a_plain_message() {
        let memory = RequestMemory::new(1 << 20);
        for (encoding, compressed) in [
            (Encoding::Gzip, gzip(b"hello")),
            (Encoding::Deflate, zlib(b"hello")),
        ] {
            let mut charge = memory.charge();
            let message = encoding.inflate(&compressed, 5, &mut charge).unwrap();
            assert_eq!(&message[..], b"\0\0\0\0\x05hello", "{encoding:?}");
            assert_eq!(charge.held(), 5);
        }
    }

    #[test]
    fn stops_at_the_size_limit_and_at_the_servers_request_memory() {
        let memory = RequestMemory::new(usize::MAX);
        let err = Encoding::Gzip
            .inflate(&gzip(&[0; 4097]), 4096, &mut memory.charge())
            .unwrap_err();
        assert_eq!(err.code(), tonic::Code::ResourceExhausted);
        assert!(err.message().contains("size limit"), "{}", err.message());

        let small = RequestMemory::new(1 << 20);
        let mut charge = small.charge();
        let err = Encoding::Gzip
            .inflate(&gzip(&[0; 2 << 20]), MAX_INFLATED_SIZE, &mut charge)
            .unwrap_err();
        assert_eq!(err.code(), tonic::Code::ResourceExhausted);
        assert!(
            err.message().contains("request_memory"),
            "{}",
            err.message()
        );
        assert!(charge.held() <= 1 << 20);
    }

    #[test]
    fn garbage_is_an_internal_error_and_headers_name_the_encoding() {
        let memory = RequestMemory::new(1 << 20);
        let err = Encoding::Deflate
            .inflate(b"not zlib at all", 100, &mut memory.charge())
            .unwrap_err();
        assert_eq!(err.code(), tonic::Code::Internal);
        let mut headers = HeaderMap::new();
        assert_eq!(Encoding::take_from(&mut headers), None);
        headers.insert("grpc-encoding", "zstd".parse().unwrap());
        assert_eq!(Encoding::take_from(&mut headers), None);
        assert!(headers.contains_key("grpc-encoding"), "left to tonic");
        headers.insert("grpc-encoding", "gzip".parse().unwrap());
        assert_eq!(Encoding::take_from(&mut headers), Some(Encoding::Gzip));
        assert!(!headers.contains_key("grpc-encoding"));
    }
}
