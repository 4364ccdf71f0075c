//! Attribution: whom a regression belongs to. Pure.

pub mod components;
