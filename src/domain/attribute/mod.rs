//! Attribution: whom a regression belongs to. Pure.

pub mod components;
pub mod evidence;
pub mod facts;
pub mod mechanism;
pub mod scope;
