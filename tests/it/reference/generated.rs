//! Agreement on generated histories (placeholder).
