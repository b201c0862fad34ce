//! Tests of `reconstruct` through a store: block quotes, the token cap, the modes' shapes and
//! the request's arguments (the stages' own tests are in `stages/tests.rs`).

mod block;
mod cap;
mod mode;
mod request;
