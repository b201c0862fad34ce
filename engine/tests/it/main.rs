//! The engine's one integration binary.
