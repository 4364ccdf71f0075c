//! The units of time sheriff counts in: Unix seconds, grouped into hours and UTC days.

/// Seconds in an hour.
pub const HOUR: i64 = 3_600;

/// Seconds in a day: a UTC day number is `seconds.div_euclid(DAY)`.
pub const DAY: i64 = 24 * HOUR;
