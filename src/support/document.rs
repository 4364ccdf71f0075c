//! A document in no markup: headings, paragraphs, bullet lists and tables of running text,
//! with code and links. `words` writes a Jira issue in it; the Jira sink writes it as wiki
//! markup or as Atlassian Document Format (`adapters::notify::jira::adf`), each escaping what
//! its own markup gives meaning to.

/// A piece of running text.
#[derive(Debug, Clone, PartialEq)]
pub enum Inline {
    Text(String),
    Code(String),
    Link { text: String, url: String },
}

/// A block of a document.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Heading(String),
    Para(Vec<Inline>),
    Bullets(Vec<Vec<Inline>>),
    Table {
        header: Vec<String>,
        rows: Vec<Vec<String>>,
    },
}

/// Plain running text.
pub fn text(s: impl Into<String>) -> Inline {
    Inline::Text(s.into())
}
