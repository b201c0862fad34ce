//! Tests of the recall entry that need a store (the stages' own tests are in `stages/tests/`).

mod depth;
mod propagation_depth;
