//! Payload fingerprints: what "same key, same payload" compares.
//!
//! Owns: a job's *input* as the history records it (the document, the operation and a 64-bit
//! fingerprint of the submitted content) and the payload hash computed from those three, a
//! published function (`docs/history-format.md`) that a recorder in any language can compute and
//! the checker recomputes. The model's *output* is not part of it: a language model may answer
//! differently on a retry, and that must not look like a different request.
//! Does not: decide what a mismatch means (see `model::queue::enqueue` and `model::outbox::commit`).

use crate::base::ids::{DocumentId, OperationId};
use crate::vocab::fnv_suffix::{fnv1a_from, Suffix};
use crate::vocab::key::{KeyNames, OPERATION};
use std::fmt;

/// A 64-bit payload fingerprint (a fingerprint, not a signature: collisions are not a threat
/// model here, only accidental equality matters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct PayloadHash(pub u64);

impl fmt::Display for PayloadHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
pub(super) const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a over bytes: stable across platforms and crate versions.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h = Fnv1a::default();
    h.bytes(bytes);
    h.0
}

/// FNV-1a as a `fmt::Write` sink, so names are hashed as they are rendered, without a string.
#[derive(Clone, Copy, Debug, Hash)]
pub struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(FNV_OFFSET)
    }
}

impl Fnv1a {
    #[inline]
    fn bytes(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= *b as u64;
            self.0 = self.0.wrapping_mul(FNV_PRIME);
        }
    }

    /// `content` as 16 lowercase hex digits, most significant first: the same bytes as
    /// `bytes(format!("{content:016x}"))`, without a loop that shifts by a computed amount. The
    /// generated default content (0) is sixteen `'0'`s.
    #[inline]
    fn hex16(&mut self, content: u64) {
        if content == 0 {
            for _ in 0..16 {
                self.0 = (self.0 ^ b'0' as u64).wrapping_mul(FNV_PRIME);
            }
            return;
        }
        const HEX: &[u8; 16] = b"0123456789abcdef";
        for byte in content.to_be_bytes() {
            self.0 = (self.0 ^ HEX[(byte >> 4) as usize] as u64).wrapping_mul(FNV_PRIME);
            self.0 = (self.0 ^ HEX[(byte & 0xF) as usize] as u64).wrapping_mul(FNV_PRIME);
        }
    }

    pub fn finish(&self) -> u64 {
        self.0
    }
}

impl fmt::Write for Fnv1a {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.bytes(s.as_bytes());
        Ok(())
    }
}

/// A content fingerprint as the history writes it: 16 lowercase hex digits.
pub fn content_hex(content: u64) -> String {
    format!("{content:016x}")
}

/// The payload hash: FNV-1a-64 of `document + "\n" + operation + "\n" + content`, the content
/// written as 16 lowercase hex digits. This is the whole definition; `docs/history-format.md`
/// repeats it for recorders outside this crate.
///
/// Computed faster than byte by byte, to the same value (the checker recomputes it for every
/// enqueue and commit; tests hold it to [`payload_hash_bytewise`]): a name starting `doc-` (every
/// generated document's) starts from the state those four bytes leave, and for the simulator's
/// operation what follows the name is fed at once (`fnv_suffix.rs`).
pub fn payload_hash(
    names: &KeyNames,
    document: DocumentId,
    operation: OperationId,
    content: u64,
) -> PayloadHash {
    /// What "doc-" leaves in the state from FNV's offset basis.
    const AFTER_DOC: u64 = fnv1a_from(FNV_OFFSET, b"doc-");
    /// "\n" + the simulator's operation + "\n", and that with the default content after it.
    static EXTRACT: Suffix = Suffix::new(b"\nextract\n");
    static EXTRACT_DEFAULT: Suffix = Suffix::new(b"\nextract\n0000000000000000");
    let mut name = [0u8; 14];
    let name = names.documents.name_bytes(document, &mut name);
    let (mut h, rest) = match name.strip_prefix(b"doc-") {
        Some(rest) => (Fnv1a(AFTER_DOC), rest),
        None => (Fnv1a::default(), name),
    };
    h.bytes(rest);
    if operation == OperationId::EXTRACT {
        debug_assert_eq!(names.operations.name(operation), OPERATION);
        if content == 0 {
            return PayloadHash(EXTRACT_DEFAULT.feed(h.0));
        }
        h.0 = EXTRACT.feed(h.0);
    } else {
        h.bytes(b"\n");
        h.bytes(names.operations.name(operation).as_bytes());
        h.bytes(b"\n");
    }
    h.hex16(content);
    PayloadHash(h.finish())
}

/// The payload hash byte by byte, as its definition says: what [`payload_hash`] must equal.
pub fn payload_hash_bytewise(
    names: &KeyNames,
    document: DocumentId,
    operation: OperationId,
    content: u64,
) -> PayloadHash {
    let text = format!(
        "{}\n{}\n{content:016x}",
        names.documents.name(document),
        names.operations.name(operation)
    );
    PayloadHash(fnv1a(text.as_bytes()))
}

/// The content of a document as submitted: its id, the operation asked for, and a fingerprint of
/// its bytes (0 for the generated default content, the FNV-1a of an explicit payload string
/// otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Payload {
    pub document: DocumentId,
    pub operation: OperationId,
    pub content: u64,
}

impl Payload {
    /// The default content of `document` for the simulator's operation.
    pub fn of(document: DocumentId) -> Payload {
        Payload {
            document,
            operation: OperationId::EXTRACT,
            content: 0,
        }
    }

    /// An explicit payload given as text in a scenario.
    pub fn from_text(document: DocumentId, text: &str) -> Payload {
        Payload {
            content: fnv1a(text.as_bytes()),
            ..Payload::of(document)
        }
    }

    pub fn hash(&self, names: &KeyNames) -> PayloadHash {
        payload_hash(names, self.document, self.operation, self.content)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::key::Documents;

    #[test]
    fn hash_depends_on_document_operation_and_content_only() {
        let mut names = KeyNames::default();
        let a = Payload::of(Documents::generated(1));
        assert_eq!(
            a.hash(&names),
            Payload::of(Documents::generated(1)).hash(&names)
        );
        assert_ne!(
            a.hash(&names),
            Payload::of(Documents::generated(2)).hash(&names)
        );
        assert_ne!(
            a.hash(&names),
            Payload::from_text(Documents::generated(1), "total: 12.00").hash(&names)
        );
        let other_op = names.operations.register("classify");
        assert_ne!(
            a.hash(&names),
            Payload {
                operation: other_op,
                ..a
            }
            .hash(&names)
        );
    }

    /// The published definition, computed the long way.
    #[test]
    fn the_hash_is_fnv1a_of_the_documented_text() {
        let mut names = KeyNames::default();
        let d = names.documents.named("invoice-9").unwrap();
        let p = Payload {
            content: 0xab,
            ..Payload::of(d)
        };
        assert_eq!(
            p.hash(&names).0,
            fnv1a(b"invoice-9\nextract\n00000000000000ab")
        );
        assert_eq!(
            Payload::of(Documents::generated(42)).hash(&names).0,
            fnv1a(b"doc-42\nextract\n0000000000000000")
        );
        for n in [0, 7, 10, 99, 100, 123_456, u32::MAX >> 1] {
            let text = format!("doc-{n}\nextract\nfedcba9876543210");
            let p = Payload {
                content: 0xfedc_ba98_7654_3210,
                ..Payload::of(Documents::generated(n))
            };
            assert_eq!(p.hash(&names).0, fnv1a(text.as_bytes()), "{text}");
        }
    }

    proptest::proptest! {
        /// The fast path is the definition: generated documents (every digit count), named ones
        /// (some starting "doc-"), the simulator's operation and others, default and explicit
        /// content.
        #[test]
        fn payload_hash_is_the_bytewise_definition(
            generated in proptest::prop_oneof![
                0u32..1000,
                proptest::sample::select(vec![0u32, 9, 10, 99, 100, 9_999, 10_000, (1 << 31) - 1]),
                0u32..(1 << 31),
            ],
            named in proptest::sample::select(vec!["invoice-9", "doc-x", "doc-0007", "d", "doc-123abc"]),
            op in proptest::sample::select(vec!["extract", "classify", "", "extract2", "extrac"]),
            content in proptest::prop_oneof![proptest::strategy::Just(0u64), proptest::strategy::Just(u64::MAX), proptest::num::u64::ANY],
        ) {
            let mut names = KeyNames::default();
            let named = names.documents.named(named).unwrap();
            let ops = [OperationId::EXTRACT, names.operations.register(op)];
            for document in [Documents::generated(generated), named] {
                for operation in ops {
                    proptest::prop_assert_eq!(
                        payload_hash(&names, document, operation, content),
                        payload_hash_bytewise(&names, document, operation, content)
                    );
                }
            }
        }
    }

    #[test]
    fn fnv_is_the_published_function() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
