//! What a 401 says about authorization: the `WWW-Authenticate` challenges as sent and the
//! protected resource metadata document (RFC 9728) they point to, fetched once, bounded,
//! from the endpoint's own origin only (another origin is named, never contacted). No
//! credentials are sent with that fetch and no authorization flow is started: the record
//! shows what a client would need, nothing more.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::client::exchange;
use super::message::{HeadLimits, Method, Request};
use super::url::{HttpUrl, redact_reference};

/// Bytes of a metadata document read at most.
const MAX_DOCUMENT: u64 = 64 * 1024;
/// The longest the metadata fetch may take.
const FETCH_WAIT: Duration = Duration::from_secs(5);
/// Challenges kept, and bytes of each.
const MAX_CHALLENGES: usize = 8;
const MAX_CHALLENGE: usize = 1024;

/// A 401: the challenges, and the protected resource metadata when it could be had.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuthSeen {
    /// Every `WWW-Authenticate` value (server text, cut to 1 KiB each).
    pub challenges: Vec<String>,
    /// Where the metadata document is (the challenge's `resource_metadata`, else the
    /// well-known location of the endpoint), redacted.
    pub metadata_url: Option<String>,
    /// The HTTP status of the metadata fetch, when one was made.
    pub metadata_status: Option<u16>,
    /// The document, when it was a JSON object (bounded).
    pub metadata: Option<Value>,
    /// Why no document was fetched or kept, in words.
    pub metadata_note: Option<String>,
}

/// The `resource_metadata` parameter of a challenge (quoted or token form).
fn resource_metadata(challenge: &str) -> Option<String> {
    let lower = challenge.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find("resource_metadata") {
        let start = from + at;
        from = start + "resource_metadata".len();
        // A parameter name starts the challenge or follows a space or a comma.
        let before = challenge[..start].chars().next_back();
        if before.is_some_and(|c| c != ' ' && c != ',') {
            continue;
        }
        let rest = challenge[from..].trim_start();
        let Some(rest) = rest.strip_prefix('=') else {
            continue;
        };
        let rest = rest.trim_start();
        let value = match rest.strip_prefix('"') {
            Some(q) => q.split('"').next().unwrap_or(""),
            None => rest.split([',', ' ']).next().unwrap_or(""),
        };
        return (!value.is_empty()).then(|| value.to_string());
    }
    None
}

/// RFC 9728's well-known location for `url`: the path after
/// `/.well-known/oauth-protected-resource`.
fn well_known(url: &HttpUrl) -> String {
    let path = url.target.split('?').next().unwrap_or("/");
    let path = if path == "/" { "" } else { path };
    format!("{}/.well-known/oauth-protected-resource{path}", url.origin())
}

/// Records the challenges of a 401 from `endpoint` and fetches the metadata document when it
/// is on the endpoint's origin, before `deadline` (and within 5 s).
pub fn inspect(
    endpoint: &HttpUrl,
    tls: &super::tls::TlsOptions,
    challenges: &[String],
    deadline: Instant,
) -> AuthSeen {
    let mut seen = AuthSeen {
        challenges: challenges
            .iter()
            .take(MAX_CHALLENGES)
            .map(|c| crate::text::cut(c, MAX_CHALLENGE).to_string())
            .collect(),
        ..AuthSeen::default()
    };
    let named = challenges.iter().find_map(|c| resource_metadata(c));
    let location = named.unwrap_or_else(|| well_known(endpoint));
    let Ok(url) = HttpUrl::parse(&location) else {
        seen.metadata_url = Some(redact_reference(&location));
        seen.metadata_note = Some("the metadata location is not an http URL this tool can read".into());
        return seen;
    };
    seen.metadata_url = Some(url.redacted());
    if url.origin() != endpoint.origin() {
        seen.metadata_note = Some("the metadata is on another origin: not fetched".into());
        return seen;
    }
    let deadline = deadline.min(Instant::now() + FETCH_WAIT);
    let dial = match super::client::Dial::resolve(&url, tls, deadline) {
        Ok(d) => d,
        Err(e) => {
            seen.metadata_note = Some(format!("{e}"));
            return seen;
        }
    };
    let bytes = Request {
        method: Method::Get,
        target: &url.target,
        host: &url.host_header(),
        fields: &[("Accept", "application/json")],
        secrets: &[],
        body: None,
    }
    .to_bytes();
    match exchange(
        &dial,
        Method::Get,
        &bytes,
        HeadLimits::default(),
        MAX_DOCUMENT + 1,
        deadline,
    ) {
        Ok(resp) => {
            seen.metadata_status = Some(resp.head.status);
            if !(200..300).contains(&resp.head.status) {
                seen.metadata_note = Some(format!("the metadata fetch got HTTP {}", resp.head.status));
            } else if resp.body.len() as u64 > MAX_DOCUMENT {
                seen.metadata_note = Some(format!(
                    "the metadata document is over {MAX_DOCUMENT} bytes: not kept"
                ));
            } else {
                match crate::json_budget::parse_object(&resp.body, crate::json_budget::Budget::small(1 << 20))
                {
                    Ok(map) => {
                        seen.metadata = Some(crate::evidence::canonical::foreign_bounded(&Value::Object(map)))
                    }
                    Err(_) => seen.metadata_note = Some("the metadata document is not a JSON object".into()),
                }
            }
        }
        Err(e) => seen.metadata_note = Some(format!("the metadata fetch failed: {e}")),
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_metadata_is_read_quoted_or_bare_and_not_from_a_longer_name() {
        assert_eq!(
            resource_metadata(
                r#"Bearer realm="x", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp""#
            )
            .as_deref(),
            Some("http://h/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(
            resource_metadata("Bearer resource_metadata=http://h/m, scope=x").as_deref(),
            Some("http://h/m")
        );
        assert_eq!(
            resource_metadata(r#"Bearer x_resource_metadata="http://h/m""#),
            None
        );
        assert_eq!(resource_metadata("Bearer"), None);
    }

    #[test]
    fn the_well_known_location_keeps_the_endpoint_path_and_drops_the_query() {
        let u = HttpUrl::parse("http://127.0.0.1:9/mcp?k=v").unwrap();
        assert_eq!(
            well_known(&u),
            "http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp"
        );
        let root = HttpUrl::parse("http://127.0.0.1:9/").unwrap();
        assert_eq!(
            well_known(&root),
            "http://127.0.0.1:9/.well-known/oauth-protected-resource"
        );
    }
}
