//! Errors as people read them: an error with the errors it wraps, on one line. Each layer's
//! own error (thiserror) says its part; anyhow's `{:#}` says the chain, and so does
//! [`with_sources`] for an error that is not anyhow's.

/// An error and its sources, as one line (`a: b: c`), as a log or an ingest entry shows it:
/// what anyhow's `{:#}` prints, for any error.
pub(crate) fn with_sources(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text = format!("{text}: {e}");
        source = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_is_told_with_every_error_it_wraps() {
        let inner = std::io::Error::other("disk full");
        let outer = anyhow::Error::new(inner).context("writing the run");
        let e: &dyn std::error::Error = outer.as_ref();
        assert_eq!(with_sources(e), "writing the run: disk full");
        assert_eq!(with_sources(e), format!("{outer:#}"));
    }
}
