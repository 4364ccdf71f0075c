//! Logging with tracing: readable text by default (coloured only on a terminal), JSON by
//! setting; `RUST_LOG` wins over both.
//!
//! In text, one event is one line, whatever it carries: control characters that arrive in
//! artifact names, run paths or error texts (a newline in a file name, say) are written
//! escaped, so nothing from outside can forge a log line. JSON escapes them by itself.

use std::io::{IsTerminal, Write};

use tracing_subscriber::EnvFilter;

use crate::config::{LogFormat, LogSettings};

/// Installs the global subscriber once; later calls (tests) are ignored. Logs go to stderr so
/// that stdout stays clean for `--format json` output.
pub fn init(settings: &LogSettings) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&settings.level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    // Colours only for a person at a terminal: a redirected log (a file, a pipe, a collector)
    // gets plain text.
    let colour = std::io::stderr().is_terminal();
    let _ = match settings.format {
        LogFormat::Text => builder
            .with_writer(|| OneLine(std::io::stderr()))
            .with_ansi(colour)
            .with_target(false)
            .try_init(),
        LogFormat::Json => {
            let json = builder.with_writer(std::io::stderr).with_ansi(false).json();
            json.flatten_event(true).with_current_span(true).try_init()
        }
    };
}

/// The length of a colour sequence (`ESC [ 1;32 m`) at the start of `s`, if one is there:
/// the formatter's own colours on a terminal, which can change no more than colour.
fn colour_len(s: &str) -> Option<usize> {
    let rest = s.strip_prefix("\u{1b}[")?;
    let digits = rest
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b';')
        .count();
    (rest.as_bytes().get(digits) == Some(&b'm')).then_some(2 + digits + 1)
}

/// `text` as one line: control characters other than the final newline written as escapes
/// (`\n`, `\r`, `\t`, `\u{…}`), and the bidirectional overrides too; colour sequences kept.
pub fn one_line(text: &str) -> String {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut out = String::with_capacity(body.len() + 1);
    let mut chars = body.char_indices();
    while let Some((at, c)) = chars.next() {
        if let Some(n) = colour_len(&body[at..]) {
            out.push_str(&body[at..at + n]);
            for _ in 1..n {
                chars.next();
            }
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if crate::support::render::is_hostile_char(c) => {
                out.push_str(&c.escape_unicode().to_string())
            }
            c => out.push(c),
        }
    }
    if body.len() < text.len() {
        out.push('\n');
    }
    out
}

/// A writer that writes each formatted event as [`one_line`]. The formatter hands it one whole
/// event per write.
struct OneLine<W: Write>(W);

impl<W: Write> Write for OneLine<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0.write_all(one_line(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_event_stays_one_line_whatever_it_carries() {
        let forged = "WARN run not ingested file=backend-disruption_a\n2026-12-01T00:00:00Z  INFO sheriff: FORGED\n";
        let line = super::one_line(forged);
        assert_eq!(line.matches('\n').count(), 1);
        assert!(
            line.ends_with("FORGED\n") && line.contains("_a\\n2026"),
            "{line}"
        );
        assert_eq!(
            super::one_line("tab\there\u{1b}]0;title\u{7}\u{202e}x\n"),
            "tab\\there\\u{1b}]0;title\\u{7}\\u{202e}x\n"
        );
        // the formatter's own colours stay colours
        assert_eq!(
            super::one_line("\u{1b}[2mtime\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m x\n"),
            "\u{1b}[2mtime\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m x\n"
        );
        assert_eq!(super::one_line("plain"), "plain");
    }
}
