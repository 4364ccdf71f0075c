//! Attribution: whom a regression belongs to. Pure.

pub mod components;
pub mod describe;
pub mod evidence;
pub mod mechanism;
pub mod scope;
