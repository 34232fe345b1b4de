//! A prost codec that decodes each request from its bytes taken whole, after charging what
//! decoding it will hold to the server's request memory.
//!
//! tonic hands a decoder a `DecodeBuf`, a view over its receive buffer whose every read goes
//! through two layers of bounds checks; prost reads a varint or skips a field through it
//! byte by byte. For a `CreateContext` of a large cluster (a million small fields across
//! 1,024 tasks) that was a quarter of a server's time. Taking the message as one `Bytes`
//! first costs nothing (tonic's buffer is contiguous, so it is a reference count, not a copy),
//! and prost then reads a plain slice.
//!
//! What a message costs once decoded follows how many records it holds, not its length: an
//! empty device record is 2 bytes on the wire and tens of bytes decoded, so 57 KB of gzip
//! could once make a server allocate a gigabyte. Each message type says what it costs
//! ([`DecodedSize`]), and the message is decoded only if that fits.

use std::marker::PhantomData;

use bytes::Buf;
use prost::Message;
use tonic::Status;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic_prost::ProstCodec;

use grpc_guard::{Charge, RequestMemory};

/// What decoding a message allocates beyond its own bytes, from its bytes; `at_most` is the
/// most the caller can give (an estimate may stop counting past it).
pub(crate) trait DecodedSize {
    fn decoded_size(bytes: &[u8], at_most: usize) -> usize;
}

/// A decoded message with the share of request memory it holds until it is dropped.
pub(crate) struct Charged<D> {
    pub(crate) message: D,
    pub(crate) charge: Charge,
}

/// Encodes `E` as prost does; decodes `D` from its whole bytes, charged to `memory`.
pub(crate) struct Contiguous<E, D> {
    memory: RequestMemory,
    types: PhantomData<(E, D)>,
}

impl<E, D> Contiguous<E, D> {
    pub(crate) fn new(memory: RequestMemory) -> Self {
        Self {
            memory,
            types: PhantomData,
        }
    }
}

impl<E, D> Codec for Contiguous<E, D>
where
    E: Message + Send + 'static,
    D: Message + DecodedSize + Default + Send + 'static,
{
    type Encode = E;
    type Decode = Charged<D>;
    type Encoder = <ProstCodec<E, D> as Codec>::Encoder;
    type Decoder = WholeDecoder<D>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<E, D>::default().encoder()
    }

    fn decoder(&mut self) -> Self::Decoder {
        WholeDecoder {
            memory: self.memory.clone(),
            types: PhantomData,
        }
    }
}

pub(crate) struct WholeDecoder<D> {
    memory: RequestMemory,
    types: PhantomData<D>,
}

impl<D: Message + DecodedSize + Default> Decoder for WholeDecoder<D> {
    type Item = Charged<D>;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<Charged<D>>, Status> {
        let bytes = buf.copy_to_bytes(buf.remaining());
        let mut charge = self.memory.charge();
        // The bytes themselves stay held while the message lives (it keeps slices of them).
        let extra = D::decoded_size(&bytes, self.memory.total());
        charge.add(bytes.len().saturating_add(extra))?;
        // INTERNAL, as tonic's own prost decoder answers a message that does not parse.
        let message = D::decode(bytes).map_err(|e| Status::internal(e.to_string()))?;
        Ok(Some(Charged { message, charge }))
    }

    fn buffer_settings(&self) -> BufferSettings {
        BufferSettings::default()
    }
}

/// How many times each field of `tags` occurs at the top level of the protobuf message
/// `bytes`, and the bytes its length-delimited occurrences hold; stops once `stop(counts)`
/// holds. A malformed message is counted as far as it reads (decoding it fails later).
pub(crate) fn count_fields<const N: usize>(
    mut bytes: &[u8],
    tags: [u32; N],
    stop: impl Fn(&[(usize, usize); N]) -> bool,
) -> [(usize, usize); N] {
    use prost::encoding::{DecodeContext, WireType, decode_key, decode_varint, skip_field};
    let mut counts = [(0, 0); N];
    while bytes.has_remaining() && !stop(&counts) {
        let Ok((tag, wire_type)) = decode_key(&mut bytes) else {
            break;
        };
        let slot = tags.iter().position(|&t| t == tag);
        if let (Some(i), WireType::LengthDelimited) = (slot, wire_type) {
            let Ok(len) = decode_varint(&mut bytes) else {
                break;
            };
            let len = usize::try_from(len).unwrap_or(usize::MAX).min(bytes.len());
            counts[i].0 += 1;
            counts[i].1 += len;
            bytes.advance(len);
            continue;
        }
        if let Some(i) = slot {
            counts[i].0 += 1;
        }
        if skip_field(wire_type, tag, &mut bytes, DecodeContext::default()).is_err() {
            break;
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_named_fields_and_their_bytes_only() {
        // Field 6 twice (2 and 0 bytes), field 1 once (3 bytes), field 7 fixed64, field 3 varint.
        let message = [
            0x32, 2, b'a', b'b', 0x32, 0, 0x0a, 3, 1, 2, 3, 0x39, 0, 0, 0, 0, 0, 0, 0, 0, 0x18,
            0x96, 0x01,
        ];
        assert_eq!(
            count_fields(&message, [6, 1, 3], |_| false),
            [(2, 2), (1, 3), (1, 0)]
        );
        // Stops once asked to.
        assert_eq!(count_fields(&message, [6], |c| c[0].0 >= 1), [(1, 2)]);
        // A length past the end counts what is there.
        assert_eq!(count_fields(&[0x32, 100, 1], [6], |_| false), [(1, 1)]);
        assert_eq!(count_fields(&[0xff], [6], |_| false), [(0, 0)]);
    }
}
