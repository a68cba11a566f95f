//! Payload hashing.
//!
//! Owns: the fingerprint of a job's *input* (the document's content and the operation), which is
//! what "same key, same payload" compares. The model's *output* is not part of it: a language
//! model may answer differently on a retry, and that must not look like a different request.
//! Does not: decide what a mismatch means (see `queue::enqueue` and `outbox::commit`).

use crate::ids::DocumentId;
use std::fmt;

/// The operation every job performs. Part of the payload, so a future operation on the same
/// document content is a different payload.
pub const OPERATION: &str = "extract";

/// A 64-bit payload fingerprint (a fingerprint, not a signature: collisions are not a threat
/// model here, only accidental equality matters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct PayloadHash(pub u64);

impl fmt::Display for PayloadHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// FNV-1a over bytes: stable across platforms and crate versions.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// SplitMix64's finaliser: a cheap, well-mixed 64-bit permutation.
#[inline]
pub fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The content of a document as submitted: its id and a revision of its bytes (0 for the
/// generated default content, the FNV-1a of an explicit payload string otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Payload {
    pub document: DocumentId,
    pub content: u64,
}

impl Payload {
    pub fn hash(&self) -> PayloadHash {
        let op = fnv1a(OPERATION.as_bytes());
        PayloadHash(mix64(mix64(self.document.0 as u64 ^ op) ^ self.content))
    }

    /// An explicit payload given as text in a scenario.
    pub fn from_text(document: DocumentId, text: &str) -> Payload {
        Payload {
            document,
            content: fnv1a(text.as_bytes()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_depends_on_document_and_content_only() {
        let a = Payload {
            document: DocumentId(1),
            content: 0,
        };
        assert_eq!(
            a.hash(),
            Payload {
                document: DocumentId(1),
                content: 0
            }
            .hash()
        );
        assert_ne!(
            a.hash(),
            Payload {
                document: DocumentId(2),
                content: 0
            }
            .hash()
        );
        assert_ne!(
            a.hash(),
            Payload::from_text(DocumentId(1), "total: 12.00").hash()
        );
        assert_eq!(
            Payload::from_text(DocumentId(1), "x").hash(),
            Payload::from_text(DocumentId(1), "x").hash()
        );
    }

    #[test]
    fn fnv_is_the_published_function() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
