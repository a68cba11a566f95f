//! Tenant-scoped idempotency keys: `tenant:document:vN`.
//!
//! Owns: what a valid tenant id, document id and operation version are, and the one way to put
//! them together into a key. A key cannot be built without a tenant: the only `TenantId`s that
//! exist come out of [`Tenants::register`], which validates the name first. This is the
//! structural defence against the chapter's failure 4 (two tenants sharing a documentId).
//! Does not: decide what happens when a key is seen twice (see `model::queue` and
//! `model::outbox`).

use crate::base::ids::{DocumentId, OperationId, TenantId};
use std::collections::BTreeMap;
use std::fmt;

/// Why a key could not be built. Messages are lowercase and name the offending value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Hash)]
pub enum KeyError {
    #[error("invalid tenant id {}: must match ^[a-z][a-z0-9-]{{1,32}}$", crate::base::messages::clip(.0))]
    InvalidTenant(String),
    #[error("documentId is required for an idempotency key (got an empty string)")]
    EmptyDocument,
    #[error("invalid documentId {}: must not contain ':' (the key separator)", crate::base::messages::clip(.0))]
    DocumentWithSeparator(String),
    #[error("invalid documentId {}: must be {DOCUMENT_RULE}", crate::base::messages::clip(.0))]
    InvalidDocument(String),
    #[error("operationVersion must be an integer >= 1 (got {0})")]
    InvalidVersion(i64),
    #[error("more than {MAX_TENANTS} tenants in one run")]
    TooManyTenants,
}

/// Tenants in one run (the id is 16 bits, and `0xFFFF` marks a key without a tenant).
pub const MAX_TENANTS: usize = 0xFFFF;

/// `^[a-z][a-z0-9-]{1,32}$`, written out so the model needs no regex engine.
pub fn validate_tenant(name: &str) -> Result<(), KeyError> {
    let bytes = name.as_bytes();
    let ok = (2..=33).contains(&bytes.len())
        && bytes[0].is_ascii_lowercase()
        && bytes[1..]
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    if ok {
        Ok(())
    } else {
        Err(KeyError::InvalidTenant(name.to_string()))
    }
}

/// What a documentId may be: it is part of every idempotency key, audit record and history line.
pub const DOCUMENT_RULE: &str =
    "1 to 128 characters from A-Z, a-z, 0-9, '.', '_', '-' and '/' (':' separates the key's parts)";
pub const MAX_DOCUMENT: usize = 128;

pub fn validate_document(document: &str) -> Result<(), KeyError> {
    let allowed = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-' | b'/');
    if document.is_empty() {
        Err(KeyError::EmptyDocument)
    } else if document.contains(':') {
        Err(KeyError::DocumentWithSeparator(document.to_string()))
    } else if document.len() > MAX_DOCUMENT || !document.bytes().all(allowed) {
        Err(KeyError::InvalidDocument(document.to_string()))
    } else {
        Ok(())
    }
}

/// The chapter's `buildIdempotencyKey`, on strings: validates all three parts, then joins them.
pub fn build_idempotency_key(
    tenant: &str,
    document: &str,
    version: i64,
) -> Result<String, KeyError> {
    validate_tenant(tenant)?;
    validate_document(document)?;
    if version < 1 {
        return Err(KeyError::InvalidVersion(version));
    }
    Ok(format!("{tenant}:{document}:v{version}"))
}

/// The run's tenant table. Registering validates the name; a `TenantId` is proof it was valid.
#[derive(Clone, Debug, Default, Hash)]
pub struct Tenants {
    names: Vec<String>,
}

impl Tenants {
    pub fn register(&mut self, name: &str) -> Result<TenantId, KeyError> {
        validate_tenant(name)?;
        if let Some(i) = self.names.iter().position(|n| n == name) {
            return Ok(TenantId(i as u16));
        }
        if self.names.len() >= MAX_TENANTS {
            return Err(KeyError::TooManyTenants);
        }
        self.names.push(name.to_string());
        Ok(TenantId((self.names.len() - 1) as u16))
    }

    /// A tenant as a version 2 history names it: any string (the reader checks its length).
    pub fn register_any(&mut self, name: &str) -> Result<TenantId, KeyError> {
        if let Some(i) = self.names.iter().position(|n| n == name) {
            return Ok(TenantId(i as u16));
        }
        if self.names.len() >= MAX_TENANTS {
            return Err(KeyError::TooManyTenants);
        }
        self.names.push(name.to_string());
        Ok(TenantId((self.names.len() - 1) as u16))
    }

    pub fn name(&self, tenant: TenantId) -> &str {
        &self.names[tenant.index()]
    }

    /// The id of a registered tenant, without registering one.
    pub fn find(&self, name: &str) -> Option<TenantId> {
        let i = self.names.iter().position(|n| n == name)?;
        Some(TenantId(i as u16))
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// Generated documents are numbered (`doc-N`, no allocation per job); named documents from
/// explicit enqueues live above this base.
const NAMED_BASE: u32 = 1 << 31;

/// The run's document table.
#[derive(Clone, Debug, Default, Hash)]
pub struct Documents {
    named: Vec<String>,
    by_name: BTreeMap<String, DocumentId>,
}

impl Documents {
    /// The generated document number `n`, rendered `doc-N`.
    pub fn generated(n: u32) -> DocumentId {
        assert!(n < NAMED_BASE, "generated document number out of range");
        DocumentId(n)
    }

    /// A named document; the same name always gives the same id.
    pub fn named(&mut self, name: &str) -> Result<DocumentId, KeyError> {
        validate_document(name)?;
        if let Some(n) = name
            .strip_prefix("doc-")
            .and_then(|d| d.parse::<u32>().ok())
        {
            if n < NAMED_BASE && name == format!("doc-{n}") {
                return Ok(DocumentId(n));
            }
        }
        if let Some(id) = self.by_name.get(name) {
            return Ok(*id);
        }
        let id = DocumentId(NAMED_BASE + self.named.len() as u32);
        self.named.push(name.to_string());
        self.by_name.insert(name.to_string(), id);
        Ok(id)
    }

    /// The id of a document this table knows (a generated `doc-N`, or a named one already
    /// registered), without registering one.
    pub fn find(&self, name: &str) -> Option<DocumentId> {
        if let Some(n) = name
            .strip_prefix("doc-")
            .and_then(|d| d.parse::<u32>().ok())
        {
            if n < NAMED_BASE && name == format!("doc-{n}") {
                return Some(DocumentId(n));
            }
        }
        self.by_name.get(name).copied()
    }

    /// A version 2 history's opaque key, kept as its text (no grammar; the reader checks its
    /// length). Its key is [`IdempotencyKey::opaque`].
    pub fn opaque(&mut self, name: &str) -> DocumentId {
        if let Some(id) = self.by_name.get(name) {
            return *id;
        }
        let id = DocumentId(NAMED_BASE + self.named.len() as u32);
        self.named.push(name.to_string());
        self.by_name.insert(name.to_string(), id);
        id
    }

    /// Named documents so far.
    pub fn named_len(&self) -> usize {
        self.named.len()
    }

    /// The document's name as bytes, without formatting or allocating: a generated document's
    /// `doc-N` is rendered into `buf` (the payload hash of every enqueue and commit reads it).
    #[inline]
    pub fn name_bytes<'a>(&'a self, document: DocumentId, buf: &'a mut [u8; 14]) -> &'a [u8] {
        if document.0 >= NAMED_BASE {
            return self.named[(document.0 - NAMED_BASE) as usize].as_bytes();
        }
        // "doc-" and at most 10 decimal digits, written from the end two at a time.
        const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
            2021222324252627282930313233343536373839\
            4041424344454647484950515253545556575859\
            6061626364656667686970717273747576777879\
            8081828384858687888990919293949596979899";
        let mut n = document.0 as usize;
        let mut i = buf.len();
        while n >= 100 {
            let r = n % 100;
            n /= 100;
            i -= 2;
            buf[i..i + 2].copy_from_slice(&PAIRS[2 * r..2 * r + 2]);
        }
        if n >= 10 {
            i -= 2;
            buf[i..i + 2].copy_from_slice(&PAIRS[2 * n..2 * n + 2]);
        } else {
            i -= 1;
            buf[i] = b'0' + n as u8;
        }
        i -= 4;
        buf[i..i + 4].copy_from_slice(b"doc-");
        &buf[i..]
    }

    pub fn write_name(&self, document: DocumentId, out: &mut impl fmt::Write) -> fmt::Result {
        if document.0 >= NAMED_BASE {
            out.write_str(&self.named[(document.0 - NAMED_BASE) as usize])
        } else {
            write!(out, "doc-{}", document.0)
        }
    }

    pub fn name(&self, document: DocumentId) -> String {
        let mut s = String::new();
        let _ = self.write_name(document, &mut s);
        s
    }
}

/// Operation versions above this do not fit the packed key (65,534 reprocesses of one document).
pub const MAX_VERSION: u32 = 0xFFFF;

/// An idempotency key. `tenant` is `None` only on the deliberately broken `tenantless_keys`
/// path; every correct path goes through [`IdempotencyKey::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IdempotencyKey {
    pub tenant: Option<TenantId>,
    pub document: DocumentId,
    pub version: u32,
}

impl IdempotencyKey {
    pub fn new(tenant: TenantId, document: DocumentId, version: u32) -> Result<Self, KeyError> {
        if !(1..=MAX_VERSION).contains(&version) {
            return Err(KeyError::InvalidVersion(version as i64));
        }
        Ok(IdempotencyKey {
            tenant: Some(tenant),
            document,
            version,
        })
    }

    /// A version 2 history's key: an opaque string (the document, [`Documents::opaque`]) under
    /// the tenant of the first submit that named it. Version 0, which no `tenant:document:vN`
    /// key has, marks it: it renders as its text alone.
    pub fn opaque(tenant: TenantId, document: DocumentId) -> Self {
        IdempotencyKey {
            tenant: Some(tenant),
            document,
            version: 0,
        }
    }

    /// Whether this is a version 2 history's opaque key.
    pub fn is_opaque(&self) -> bool {
        self.version == 0
    }

    /// The defect behind the `tenantless_keys` bug switch: a key from documentId and version
    /// only, so two tenants with the same documentId share it.
    pub fn tenantless_for_bug_switch(document: DocumentId, version: u32) -> Self {
        IdempotencyKey {
            tenant: None,
            document,
            version,
        }
    }

    /// The key packed into 64 bits (16 tenant, 32 document, 16 version): injective, so maps and
    /// the trace hash can use it in place of the key. `0xFFFF` is the missing tenant.
    #[inline]
    pub fn packed(&self) -> u64 {
        let tenant = self.tenant.map_or(0xFFFF, |t| t.0 as u64);
        (tenant << 48) | ((self.document.0 as u64) << 16) | (self.version as u64 & 0xFFFF)
    }

    /// Inverse of [`IdempotencyKey::packed`].
    pub fn unpack(packed: u64) -> IdempotencyKey {
        let tenant = (packed >> 48) as u16;
        IdempotencyKey {
            tenant: if tenant == 0xFFFF {
                None
            } else {
                Some(TenantId(tenant))
            },
            document: DocumentId((packed >> 16) as u32),
            version: (packed & 0xFFFF) as u32,
        }
    }
}

/// The operation every simulated job performs. Part of the payload (`vocab::payload`), so a
/// future operation on the same document content is a different payload. Registered first in
/// every [`KeyNames`].
pub const OPERATION: &str = "extract";

/// The run's operation table (the operation is part of a payload, not of a key). `extract`, the
/// simulator's operation, is always first.
#[derive(Clone, Debug, Hash)]
pub struct Operations {
    names: Vec<String>,
}

impl Default for Operations {
    fn default() -> Self {
        Operations {
            names: vec![OPERATION.to_string()],
        }
    }
}

/// Operations beyond this many in one history are refused (the id is 16 bits).
pub const MAX_OPERATIONS: usize = 0xFFFF;

impl Operations {
    /// The id of `name`, registering it on first sight. At most [`MAX_OPERATIONS`].
    pub fn register(&mut self, name: &str) -> OperationId {
        if let Some(i) = self.names.iter().position(|n| n == name) {
            return OperationId(i as u16);
        }
        assert!(self.names.len() < MAX_OPERATIONS, "operation table full");
        self.names.push(name.to_string());
        OperationId((self.names.len() - 1) as u16)
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub fn name(&self, operation: OperationId) -> &str {
        &self.names[operation.index()]
    }
}

/// Names for rendering keys as the chapter writes them, and payloads' operations.
#[derive(Clone, Debug, Default, Hash)]
pub struct KeyNames {
    pub tenants: Tenants,
    pub documents: Documents,
    pub operations: Operations,
}

impl KeyNames {
    pub fn write_key(&self, key: &IdempotencyKey, out: &mut impl fmt::Write) -> fmt::Result {
        if key.is_opaque() {
            // A recorder's own text: shown with invisible and control characters escaped.
            let name = self.documents.name(key.document);
            return out.write_str(&crate::base::messages::clip_name(&name));
        }
        if let Some(t) = key.tenant {
            out.write_str(self.tenants.name(t))?;
            out.write_char(':')?;
        }
        self.documents.write_name(key.document, out)?;
        write!(out, ":v{}", key.version)
    }

    pub fn key(&self, key: &IdempotencyKey) -> String {
        let mut s = String::with_capacity(24);
        let _ = self.write_key(key, &mut s);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rendering without formatting is `format!`'s, at every digit count and its edges.
    #[test]
    fn name_bytes_render_what_format_renders() {
        let documents = Documents::default();
        let mut n = 1u64;
        let mut numbers = vec![0u32, (1 << 31) - 1];
        while n < 1 << 31 {
            numbers.extend([n - 1, n, n + 1].map(|x| x as u32));
            n *= 10;
        }
        numbers.extend((0..2000u32).map(|i| i.wrapping_mul(2_654_435_761) >> 1));
        for n in numbers {
            let mut buf = [0u8; 14];
            let d = Documents::generated(n);
            assert_eq!(
                documents.name_bytes(d, &mut buf),
                format!("doc-{n}").as_bytes()
            );
        }
    }

    // Checklist: "the idempotency key includes tenant, document and operation version - never the
    // document alone".
    #[test]
    fn key_is_tenant_document_version_in_that_order() {
        assert_eq!(
            build_idempotency_key("acme", "doc-7", 1).unwrap(),
            "acme:doc-7:v1"
        );
        let mut names = KeyNames::default();
        let t = names.tenants.register("globex").unwrap();
        let d = names.documents.named("invoice-9").unwrap();
        let key = IdempotencyKey::new(t, d, 3).unwrap();
        assert_eq!(names.key(&key), "globex:invoice-9:v3");
    }

    #[test]
    fn tenant_must_match_the_pattern() {
        for bad in ["", "a", "Acme", "1acme", "ac_me", "acme!", &"a".repeat(34)] {
            assert!(
                matches!(validate_tenant(bad), Err(KeyError::InvalidTenant(_))),
                "{bad:?}"
            );
            assert!(build_idempotency_key(bad, "doc-1", 1).is_err());
        }
        for good in ["ab", "acme", "a-1", &"a".repeat(33)] {
            assert!(validate_tenant(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn document_and_version_are_required() {
        assert_eq!(
            build_idempotency_key("acme", "", 1),
            Err(KeyError::EmptyDocument)
        );
        assert_eq!(
            build_idempotency_key("acme", "d", 0),
            Err(KeyError::InvalidVersion(0))
        );
        assert_eq!(
            build_idempotency_key("acme", "d", -2),
            Err(KeyError::InvalidVersion(-2))
        );
        let t = Tenants::default().register("acme").unwrap();
        assert!(IdempotencyKey::new(t, DocumentId(1), 0).is_err());
    }

    // Failure 4: two tenants with the same documentId and operationVersion never share a key.
    #[test]
    fn same_document_in_two_tenants_gives_two_keys() {
        let mut names = KeyNames::default();
        let a = names.tenants.register("acme").unwrap();
        let b = names.tenants.register("globex").unwrap();
        let d = Documents::generated(7);
        let ka = IdempotencyKey::new(a, d, 1).unwrap();
        let kb = IdempotencyKey::new(b, d, 1).unwrap();
        assert_ne!(ka, kb);
        assert_ne!(names.key(&ka), names.key(&kb));
        // ...while the deliberately broken builder collides.
        assert_eq!(
            IdempotencyKey::tenantless_for_bug_switch(d, 1),
            IdempotencyKey::tenantless_for_bug_switch(d, 1)
        );
    }

    #[test]
    fn named_documents_intern_and_generated_names_round_trip() {
        let mut docs = Documents::default();
        assert_eq!(docs.named("doc-12").unwrap(), Documents::generated(12));
        let x = docs.named("invoice-1").unwrap();
        assert_eq!(docs.named("invoice-1").unwrap(), x);
        assert_eq!(docs.name(x), "invoice-1");
        assert!(docs.named("a:b").is_err());
    }
}
