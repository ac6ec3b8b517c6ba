//! Retrieval-quality evaluation against public benchmarks, through the real ingest and
//! search paths.

pub mod locomo;
