//! The server's one integration binary: real clients, schema snapshots, workspace tidiness.
