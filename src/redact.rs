//! Keeping secrets out of evidence: values of secret-named flags and variables, and values
//! shaped like well-known tokens, become `[REDACTED]` in every text a block records. The
//! server itself still receives the real values.
//!
//! What is learnt as a literal secret of a run: values of secret-named variables
//! (`--env API_TOKEN=…`), of secret-named flags (`--token X`, `--token=X`), of a
//! secret-named key nested in an argument (`--env=API_TOKEN=X`, `-e API_TOKEN=X`), of the
//! short password flag (`-p X`, `-pX`, as mysql spells it; a number such as a port is
//! kept), and string values of secret-named keys of JSON arguments (`--call-args`).
//! What is masked in any text: those literals, token shapes, URL passwords and the value
//! of a secret-named header (`X-API-Key: v`, `Authorization: Bearer v`). Server JSON is
//! redacted as it arrives (strings and object keys), before anything is cut.

/// What replaces a secret.
pub const MASK: &str = "[REDACTED]";

/// Redacts texts, knowing the literal secret values of one run.
#[derive(Debug, Default, Clone)]
pub struct Redactor {
    literals: Vec<String>,
}

/// Whether a flag or variable name looks like it holds a secret.
pub fn secret_name(name: &str) -> bool {
    let n = name.trim_start_matches('-').to_ascii_lowercase();
    const WORDS: &[&str] = &[
        "token",
        "secret",
        "passw",
        "passphrase",
        "pwd",
        "credential",
        "apikey",
        "api_key",
        "api-key",
        "private",
        "session",
        "cookie",
        "bearer",
        "signature",
        "jwt",
    ];
    // `auth` (auth, oauth, authorization, x-auth-…), but not `author`, nor the status words
    // `unauthorized`/`unauthenticated`, which name the absence of a credential.
    let auth = n.match_indices("auth").any(|(i, _)| {
        let after = &n[i..];
        !n[..i].ends_with("un") && (!after.starts_with("author") || after.starts_with("authoriz"))
    });
    let pass = n == "pass" || n.ends_with("_pass") || n.ends_with("-pass");
    WORDS.iter().any(|w| n.contains(w)) || auth || pass || n == "key" || n.ends_with("key")
}

impl Redactor {
    /// A redactor that also masks these literal values wherever they appear.
    pub fn with_secrets(values: impl IntoIterator<Item = String>) -> Self {
        let mut literals: Vec<String> = values.into_iter().filter(|v| v.len() >= 4).collect();
        // Longest first, so a secret that contains another is masked whole.
        literals.sort_by_key(|v| std::cmp::Reverse(v.len()));
        literals.dedup();
        Redactor { literals }
    }

    /// Builds a redactor for a command line and environment: secret-named env values and
    /// flag values become literals to mask.
    pub fn for_run(argv: &[String], env: &[(String, String)]) -> Self {
        let mut secrets: Vec<String> = env
            .iter()
            .filter(|(k, _)| secret_name(k))
            .map(|(_, v)| v.clone())
            .collect();
        let mut iter = argv.iter().peekable();
        while let Some(arg) = iter.next() {
            if let Some(value) = short_password(arg) {
                secrets.push(value.to_string());
            } else if arg == "-p"
                && let Some(next) = iter.peek().filter(|n| !n.starts_with('-') && !is_number(n))
            {
                secrets.push((*next).clone());
                iter.next();
            } else if arg.contains('=') {
                secrets.extend(nested_secret(arg).map(str::to_string));
            } else if arg.starts_with('-')
                && secret_name(arg)
                && let Some(next) = iter.peek().filter(|n| !n.starts_with("--"))
            {
                secrets.push((*next).clone());
                iter.next();
            }
        }
        Redactor::with_secrets(secrets)
    }

    /// The argv as it may be recorded.
    pub fn argv(&self, argv: &[String]) -> Vec<String> {
        let mut out = Vec::with_capacity(argv.len());
        let mut mask_next = false;
        for (i, arg) in argv.iter().enumerate() {
            // A secret flag's value is masked even when it starts with `-`; only another long
            // flag is taken for a flag.
            if mask_next && !arg.starts_with("--") && !(argv[i - 1] == "-p" && is_number(arg)) {
                out.push(MASK.to_string());
                mask_next = false;
                continue;
            }
            mask_next = false;
            if i > 0 && arg.contains('=') {
                // The value after the first secret-named key: `--token=X`, `--env=API_TOKEN=X`.
                if let Some(value) = nested_secret(arg) {
                    let head = &arg[..arg.len() - value.len()];
                    out.push(format!("{}{MASK}", self.text(head)));
                    continue;
                }
            }
            if i > 0
                && let Some(value) = short_password(arg)
            {
                out.push(format!("{}{MASK}", &arg[..arg.len() - value.len()]));
                continue;
            }
            if i > 0 && arg == "-p" {
                mask_next = true;
                out.push(arg.clone());
                continue;
            }
            if i > 0 && arg.starts_with('-') && !arg.contains('=') && secret_name(arg) {
                mask_next = true;
            }
            out.push(self.text(arg));
        }
        out
    }

    /// Learns the string values of secret-named keys anywhere in `value` (the JSON arguments
    /// of a call) as literals, so they are masked wherever they reappear.
    pub fn learn_json(&mut self, value: &serde_json::Value) {
        fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
            match v {
                serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
                serde_json::Value::Object(m) => {
                    for (k, v) in m {
                        match v {
                            serde_json::Value::String(s) if secret_name(k) => out.push(s.clone()),
                            _ => walk(v, out),
                        }
                    }
                }
                _ => {}
            }
        }
        let mut found = std::mem::take(&mut self.literals);
        walk(value, &mut found);
        *self = Redactor::with_secrets(found);
    }

    /// Adds literal secrets (request header values): each value whole, and the credential
    /// after an auth scheme (`Bearer TOKEN` masks `TOKEN` wherever it shows alone).
    pub fn add_secrets(&mut self, values: impl IntoIterator<Item = String>) {
        let mut found = std::mem::take(&mut self.literals);
        for v in values {
            if let Some((_, credential)) = v.trim().split_once(' ') {
                found.push(credential.trim().to_string());
            }
            found.push(v);
        }
        *self = Redactor::with_secrets(found);
    }

    /// Masks every string inside foreign JSON, object keys included: a key is the server's
    /// vocabulary, yet one that holds a secret is masked like any other text.
    pub fn json(&self, value: &mut serde_json::Value) {
        self.json_counting(value);
    }

    /// [`Redactor::json`], returning how many strings (keys included) held a known secret.
    fn json_counting(&self, value: &mut serde_json::Value) -> usize {
        match value {
            serde_json::Value::String(s) => match self.text_cow(s) {
                std::borrow::Cow::Owned(masked) => {
                    let known = usize::from(self.known_secret_in(s));
                    *s = masked;
                    known
                }
                std::borrow::Cow::Borrowed(_) => 0,
            },
            serde_json::Value::Array(a) => a.iter_mut().map(|v| self.json_counting(v)).sum(),
            serde_json::Value::Object(m) => self.map_secrets_found(m),
            _ => 0,
        }
    }

    /// [`Redactor::json`] for an object.
    pub fn map(&self, m: &mut serde_json::Map<String, serde_json::Value>) {
        self.map_secrets_found(m);
    }

    /// [`Redactor::map`], returning how many strings (keys included) held a known secret: a
    /// literal secret of the run, a URL password or a token shape. A secret-named header's
    /// value (`token: x`) is masked but not counted: in prose (`invalid token: expired`) it is
    /// as often no secret at all. `check` reports the count (`security.error_secrets`).
    pub fn map_secrets_found(&self, m: &mut serde_json::Map<String, serde_json::Value>) -> usize {
        let masked_keys: Vec<bool> = m
            .keys()
            .filter(|k| matches!(self.text_cow(k), std::borrow::Cow::Owned(_)))
            .map(|k| self.known_secret_in(k))
            .collect();
        if !masked_keys.is_empty() {
            *m = std::mem::take(m)
                .into_iter()
                .map(|(k, v)| (self.text(&k), v))
                .collect();
        }
        let keys = masked_keys.into_iter().filter(|k| *k).count();
        keys + m.values_mut().map(|v| self.json_counting(v)).sum::<usize>()
    }

    /// Whether `text` holds a literal secret of the run, a URL password or a token shape.
    pub fn known_secret_in(&self, text: &str) -> bool {
        self.literals.iter().any(|l| text.contains(l.as_str()))
            || (text.contains("://") && mask_url_passwords(text) != text)
            || mask_token_shapes_lazy(text).is_some()
    }

    /// Masks only the literal secrets of the run: for structured server text whose shape
    /// the shape rules would misread (a `WWW-Authenticate` challenge's `Bearer realm=`).
    pub fn literals(&self, text: &str) -> String {
        let mut out = text.to_string();
        for lit in &self.literals {
            if out.contains(lit.as_str()) {
                out = out.replace(lit.as_str(), MASK);
            }
        }
        out
    }

    /// Any text (stderr, noise, a call preview) as it may be recorded.
    pub fn text(&self, text: &str) -> String {
        self.text_cow(text).into_owned()
    }

    /// [`Redactor::text`] without a copy when nothing is masked: a server's 60 MiB string
    /// costs one passing copy, never several held at once.
    pub fn text_cow<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        use std::borrow::Cow;
        let mut out = Cow::Borrowed(text);
        for lit in &self.literals {
            if out.contains(lit.as_str()) {
                out = Cow::Owned(out.replace(lit.as_str(), MASK));
            }
        }
        // These two run only where their trigger (`://`, `:`) is present.
        let stages: [Stage; 2] = [("://", mask_url_passwords), (":", mask_headers)];
        for (trigger, stage) in stages {
            if !out.contains(trigger) {
                continue;
            }
            let next = stage(&out);
            if next != *out {
                out = Cow::Owned(next);
            }
        }
        match mask_token_shapes_lazy(&out) {
            Some(masked) => Cow::Owned(masked),
            None => out,
        }
    }
}

/// Whether `text` is a plain number (a port, a count): never taken for a password.
fn is_number(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

/// The value of `-pVALUE` (the short password flag with its value attached), unless it is
/// a number (`-p8080` is a port).
fn short_password(arg: &str) -> Option<&str> {
    arg.strip_prefix("-p")
        .filter(|v| !v.is_empty() && !v.starts_with('=') && !is_number(v))
}

/// In `a=b=c…`, the text after the first `=` whose left part (from the previous `=`) is a
/// secret name: `--token=X` gives `X`, `--env=API_TOKEN=X` gives `X`.
fn nested_secret(arg: &str) -> Option<&str> {
    let mut start = 0;
    for (i, _) in arg.match_indices('=') {
        if secret_name(&arg[start..i]) {
            return Some(&arg[i + 1..]);
        }
        start = i + 1;
    }
    None
}

/// Where the header-name characters at the end of `head` begin: just after the last other
/// character, which may be several bytes long (`…`, `é`).
fn after_last_non_name(head: &str) -> usize {
    head.char_indices()
        .rev()
        .find(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .map_or(0, |(i, c)| i + c.len_utf8())
}

/// Masks the value of a secret-named header or field written `Name: value` (`X-API-Key:
/// abc`, `Authorization: Bearer abc`, `"token": "abc"`). An auth scheme word stays.
fn mask_headers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(colon) = rest.find(':') {
        let (head, tail) = rest.split_at(colon);
        out.push_str(head);
        out.push(':');
        let tail = &tail[1..];
        let name_start = after_last_non_name(head);
        let name = &head[name_start..];
        // `"name": "value"`: the name may be quoted.
        let name = if name.is_empty() && head.ends_with('"') {
            let inner = &head[..head.len() - 1];
            let s = after_last_non_name(inner);
            &inner[s..]
        } else {
            name
        };
        // Bare `pass`, `key` and `session` are ordinary words before a colon in prose.
        let ordinary = ["pass", "key", "session"].contains(&name.to_ascii_lowercase().as_str());
        if name.is_empty() || ordinary || !secret_name(name) || tail.starts_with("//") {
            rest = tail;
            continue;
        }
        let spaces = tail.len() - tail.trim_start_matches([' ', '\t']).len();
        out.push_str(&tail[..spaces]);
        let mut value = &tail[spaces..];
        // An auth scheme (`Bearer`, `Basic`, `Token`) is kept; the credential after it goes.
        if let Some((scheme, after)) = value.split_once(' ')
            && ["bearer", "basic", "token", "digest"].contains(&scheme.to_ascii_lowercase().as_str())
        {
            out.push_str(scheme);
            out.push(' ');
            value = after.trim_start_matches(' ');
        }
        let quoted = value.starts_with('"');
        let body = if quoted { &value[1..] } else { value };
        let end = body
            .find(|c: char| {
                if quoted {
                    c == '"'
                } else {
                    c.is_whitespace() || matches!(c, '"' | '\'' | ',' | ';')
                }
            })
            .unwrap_or(body.len());
        if end == 0 {
            rest = value;
            continue;
        }
        if quoted {
            out.push('"');
        }
        out.push_str(MASK);
        rest = &body[end..];
    }
    out.push_str(rest);
    out
}

/// Masks the password of `scheme://user:password@host`.
fn mask_url_passwords(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let authority_end = tail
            .find(|c: char| c == '/' || c.is_whitespace() || c == '"' || c == '\'')
            .unwrap_or(tail.len());
        let authority = &tail[..authority_end];
        match (authority.rfind('@'), authority.find(':')) {
            (Some(at), Some(colon)) if colon < at => {
                out.push_str(&authority[..=colon]);
                out.push_str(MASK);
                out.push_str(&authority[at..]);
            }
            _ => out.push_str(authority),
        }
        rest = &tail[authority_end..];
    }
    out.push_str(rest);
    out
}

/// A masking pass that runs only where its trigger text appears.
type Stage = (&'static str, fn(&str) -> String);

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.'
}

/// Masks words shaped like well-known credentials.
/// Token-shaped words masked, or `None` when nothing is masked: words are slices of `text`, and
/// the output is only built from the first mask on, so a huge string that holds no token
/// costs no copy.
fn mask_token_shapes_lazy(text: &str) -> Option<String> {
    struct Out<'t> {
        text: &'t str,
        out: Option<String>,
        copied: usize,
    }
    impl Out<'_> {
        fn mask(&mut self, start: usize, end: usize) {
            let o = self
                .out
                .get_or_insert_with(|| String::with_capacity(self.text.len()));
            o.push_str(&self.text[self.copied..start]);
            o.push_str(MASK);
            self.copied = end;
        }
    }
    let mut out = Out {
        text,
        out: None,
        copied: 0,
    };
    let mut start: Option<usize> = None;
    let mut prev_word_bearer = false;
    for (i, c) in text.char_indices() {
        if is_token_char(c) {
            start.get_or_insert(i);
            continue;
        }
        let word = start.map_or("", |s| &text[s..i]);
        let is_bearer = word.eq_ignore_ascii_case("bearer");
        if let Some(s) = start.take()
            && (looks_like_token(word) || (prev_word_bearer && word.len() >= 8))
        {
            out.mask(s, i);
        }
        if !c.is_whitespace() || !is_bearer {
            prev_word_bearer = is_bearer && c == ' ';
        } else {
            prev_word_bearer = true;
        }
    }
    if let Some(s) = start {
        let word = &text[s..];
        if looks_like_token(word) || (prev_word_bearer && word.len() >= 8) {
            out.mask(s, text.len());
        }
    }
    let copied = out.copied;
    out.out.map(|mut o| {
        o.push_str(&text[copied..]);
        o
    })
}

fn looks_like_token(word: &str) -> bool {
    let rest_len = |prefix: &str| {
        word.strip_prefix(prefix)
            .map(|r| r.chars().filter(|c| c.is_ascii_alphanumeric()).count())
    };
    let at_least = |prefix: &str, n: usize| rest_len(prefix).is_some_and(|l| l >= n);
    if ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]
        .iter()
        .any(|p| at_least(p, 20))
        || at_least("github_pat_", 20)
        || at_least("glpat-", 20)
        || at_least("npm_", 30)
        || at_least("sk-", 20)
        || at_least("sk_live_", 16)
        || at_least("rk_live_", 16)
        || ["xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-"]
            .iter()
            .any(|p| at_least(p, 10))
        || at_least("AIza", 30)
        || at_least("hf_", 30)
    {
        return true;
    }
    if word.len() == 20
        && word.starts_with("AKIA")
        && word[4..]
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
    {
        return true;
    }
    // A JSON Web Token: three base64url parts, the first starting with `eyJ`.
    let parts: Vec<&str> = word.split('.').collect();
    parts.len() == 3 && word.starts_with("eyJ") && parts.iter().all(|p| p.len() >= 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn secret_flag_values_are_masked_in_both_forms() {
        let argv = s(&[
            "server",
            "--api-key",
            "abc123456",
            "--token=xyz98765",
            "--port",
            "3000",
            "--verbose",
        ]);
        let r = Redactor::for_run(&argv, &[]);
        assert_eq!(
            r.argv(&argv),
            s(&[
                "server",
                "--api-key",
                MASK,
                &format!("--token={MASK}"),
                "--port",
                "3000",
                "--verbose"
            ])
        );
    }

    #[test]
    fn secret_values_are_masked_wherever_they_reappear() {
        let env = vec![
            ("GITHUB_TOKEN".to_string(), "hunter2hunter2".to_string()),
            ("PORT".into(), "8080".into()),
        ];
        let r = Redactor::for_run(&[], &env);
        assert_eq!(
            r.text("auth with hunter2hunter2 on 8080"),
            format!("auth with {MASK} on 8080")
        );
    }

    #[test]
    fn well_known_token_shapes_are_masked() {
        let r = Redactor::default();
        let ghp = format!("ghp_{}", "a1".repeat(18));
        assert_eq!(r.text(&format!("token {ghp} used")), format!("token {MASK} used"));
        assert_eq!(r.text("key AKIAABCDEFGHIJKLMNOP!"), format!("key {MASK}!"));
        assert_eq!(
            r.text("Authorization: Bearer abcdefghijklmnopqrstuvwxyz"),
            format!("Authorization: Bearer {MASK}")
        );
        assert_eq!(
            r.text("eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4"),
            MASK
        );
        assert_eq!(
            r.text("plain words stay, sk-short too"),
            "plain words stay, sk-short too"
        );
        assert_eq!(
            r.text("postgres://admin:s3cretpw@db:5432/x"),
            format!("postgres://admin:{MASK}@db:5432/x")
        );
        assert_eq!(r.text("Bearer shorttok"), format!("Bearer {MASK}"));
    }

    #[test]
    fn nested_env_assignments_and_the_short_password_flag_are_learnt_and_masked() {
        let argv = s(&[
            "srv",
            "--env=API_TOKEN=nestedsecret1",
            "-e",
            "DB_PASSWORD=nestedsecret2",
            "-p",
            "shortflag3",
            "-pattached4",
            "-p",
            "8080",
            "--env=PORT=9000",
        ]);
        let r = Redactor::for_run(&argv, &[]);
        assert_eq!(
            r.argv(&argv),
            s(&[
                "srv",
                &format!("--env=API_TOKEN={MASK}"),
                "-e",
                &format!("DB_PASSWORD={MASK}"),
                "-p",
                MASK,
                &format!("-p{MASK}"),
                "-p",
                "8080",
                "--env=PORT=9000",
            ])
        );
        for secret in ["nestedsecret1", "nestedsecret2", "shortflag3", "attached4"] {
            assert_eq!(r.text(&format!("echo {secret}!")), format!("echo {MASK}!"));
        }
    }

    #[test]
    fn known_secrets_are_counted_and_a_header_shaped_value_alone_is_masked_but_not_counted() {
        let r = Redactor::with_secrets(["hunter2-literal".to_string()]);
        let mut m = serde_json::json!({
            "a": "invalid token: expired",
            "b": format!("auth ghp_{}", "a1".repeat(18)),
            "c": "see https://u:pw@example.com/x",
            "hunter2-literal": "d",
        });
        let m = m.as_object_mut().unwrap();
        assert_eq!(r.map_secrets_found(m), 3);
        assert_eq!(m["a"], format!("invalid token: {MASK}"));
    }

    #[test]
    fn a_header_name_after_a_multibyte_character_is_read_without_panicking() {
        let r = Redactor::default();
        assert_eq!(r.text("café: au lait …x: y"), "café: au lait …x: y");
        assert_eq!(r.text("…token: abcdef"), format!("…token: {MASK}"));
        assert_eq!(r.text("é\"api_key\": \"v\""), format!("é\"api_key\": \"{MASK}\""));
    }

    #[test]
    fn secret_named_header_values_are_masked_and_the_scheme_kept() {
        let r = Redactor::default();
        assert_eq!(
            r.text("X-API-Key: abc123 sent"),
            format!("X-API-Key: {MASK} sent")
        );
        assert_eq!(
            r.text("authorization: Basic dXNlcjpwdw=="),
            format!("authorization: Basic {MASK}")
        );
        assert_eq!(r.text(r#"{"token": "t0k"}"#), format!(r#"{{"token": "{MASK}"}}"#));
        assert_eq!(r.text("note: plain, port: 80"), "note: plain, port: 80");
        assert_eq!(r.text("pass: 3 checks, key: id"), "pass: 3 checks, key: id");
        assert_eq!(r.text("session://host/x"), "session://host/x");
    }

    #[test]
    fn a_status_word_before_a_colon_is_prose_not_a_header() {
        let r = Redactor::default();
        for prose in [
            "Unauthorized: send a bearer token",
            "401 Unauthenticated: log in first",
            "UNAUTHORIZED: missing credentials",
        ] {
            assert_eq!(r.text(prose), prose);
        }
        assert_eq!(
            r.text("Authorization: Bearer abcdefgh123"),
            format!("Authorization: Bearer {MASK}")
        );
        assert!(secret_name("X-Auth-Token") && secret_name("OAUTH_SECRET"));
        assert!(!secret_name("unauthorized") && !secret_name("--author"));
    }

    #[test]
    fn json_keys_holding_a_secret_are_masked_and_call_argument_secrets_learnt() {
        let mut r = Redactor::default();
        r.learn_json(&serde_json::json!({"nested": {"api_key": "argsecret9"}, "text": "hi"}));
        let mut v = serde_json::json!({"x-argsecret9": {"name": "argsecret9 here"}, "plain": "hi"});
        r.json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({format!("x-{MASK}"): {"name": format!("{MASK} here")}, "plain": "hi"})
        );
    }

    #[test]
    fn secret_names_without_the_usual_false_positives() {
        for yes in [
            "--token",
            "API_KEY",
            "--password",
            "--pass",
            "OAUTH_CLIENT",
            "--authorization",
            "x-auth-token",
        ] {
            assert!(secret_name(yes), "{yes}");
        }
        for no in ["PATH", "--path", "--author", "--port", "HOME", "--verbose"] {
            assert!(!secret_name(no), "{no}");
        }
        let argv = s(&["srv", "--password", "-Xsecret", "--path", "/srv/data"]);
        let r = Redactor::for_run(&argv, &[]);
        assert_eq!(
            r.argv(&argv),
            s(&["srv", "--password", MASK, "--path", "/srv/data"])
        );
    }
}
