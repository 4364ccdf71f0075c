//! Globs as sheriff's settings and matchers write them: `*` matches any run of characters,
//! everything else matches literally (`image-registry-*`, `4.1*`).

/// Whether `text` matches `pattern`.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first)
        || !text[first.len()..].ends_with(last)
        || text.len() < first.len() + last.len()
    {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn stars_match_any_run_and_the_rest_literally() {
        assert!(glob_match(
            "image-registry-*",
            "image-registry-new-connections"
        ));
        assert!(glob_match("*-new-connections", "kube-api-new-connections"));
        assert!(glob_match("kube-*-new-*", "kube-api-new-connections"));
        assert!(glob_match("*", ""));
        assert!(glob_match("4.14", "4.14"));
        assert!(!glob_match("4.14", "4.145"));
        assert!(!glob_match("a*a", "a"), "the two ends may not overlap");
        assert!(!glob_match("kube-*-reused-*", "kube-api-new-connections"));
    }
}
