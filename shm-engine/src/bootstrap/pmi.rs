//! PMI-1 client (placeholder while the client is written).
