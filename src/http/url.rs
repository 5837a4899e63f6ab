//! The target URL of an HTTP server: `http://host[:port]/path?query`, parsed strictly, its
//! `Host` header, its addresses, and the redacted form a record may show.
//!
//! Limits: `https://` parses always, but without the `https` feature [`HttpUrl::require_plain`]
//! refuses it with [`UrlError::HttpsNeedsFeature`]. No userinfo
//! (`user:pass@`): credentials go in a header (`--header-env`), never in a URL that is
//! recorded. No IPv6 zone ids, no percent-decoding of the host, no internationalised names
//! (punycode them first). The fragment is dropped. Path and query must be printable ASCII (a
//! space or a control byte would break the request line); percent-escapes pass through as
//! written. DNS names are resolved on a helper thread with a bounded wait: if getaddrinfo
//! hangs, that thread outlives the wait (std has no way to cancel it); IP literals need none.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::time::Instant;

use crate::redact::{MASK, Redactor};

/// The longest URL accepted: far beyond any real endpoint, small enough to never matter.
pub const MAX_URL: usize = 8 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    Ipv4(Ipv4Addr),
    Ipv6(Ipv6Addr),
    /// A DNS name, lower-cased.
    Name(String),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Ipv4(a) => write!(f, "{a}"),
            Host::Ipv6(a) => write!(f, "[{a}]"),
            Host::Name(n) => f.write_str(n),
        }
    }
}

/// A parsed `http://` or `https://` URL.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpUrl {
    pub scheme: Scheme,
    pub host: Host,
    pub port: u16,
    /// The request target: the path (at least `/`) and the query, as written.
    pub target: String,
}

/// Why a URL was refused. The messages say what to write instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlError {
    TooLong,
    /// Not `http://` or `https://` (the scheme is named when it is short and printable).
    NotHttp(Option<String>),
    /// `https://` in a build without the `https` feature.
    HttpsNeedsFeature,
    /// `user[:password]@` in the authority.
    Userinfo,
    NoHost,
    BadHost,
    BadPort,
    BadIpv6,
    /// A byte that cannot appear in a request line (space, control, non-ASCII).
    BadChar,
}

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlError::TooLong => write!(f, "the URL is longer than {MAX_URL} bytes"),
            UrlError::NotHttp(Some(s)) => write!(
                f,
                "the URL scheme `{s}` is not supported: give an http:// (or https://) URL"
            ),
            UrlError::NotHttp(None) => {
                f.write_str("not an http:// URL: give one such as http://127.0.0.1:3001/mcp")
            }
            UrlError::HttpsNeedsFeature => f.write_str(
                "https:// needs the `https` feature, which this build lacks: rebuild with \
                 `cargo install mcp-witness --features https`, or use an http:// URL",
            ),
            UrlError::Userinfo => f.write_str(
                "the URL carries credentials (user:password@): remove them and pass them as a \
                 header instead, e.g. --header-env 'Authorization=MY_TOKEN_VAR'",
            ),
            UrlError::NoHost => f.write_str("the URL has no host: write http://HOST[:PORT]/PATH"),
            UrlError::BadHost => f.write_str(
                "the URL's host is not a DNS name or an IP address (IPv6 goes in brackets: \
                 http://[::1]:3001/mcp)",
            ),
            UrlError::BadPort => f.write_str("the URL's port is not a number from 1 to 65535"),
            UrlError::BadIpv6 => f.write_str(
                "the URL's bracketed host is not an IPv6 address (zone ids such as %eth0 are \
                 not supported)",
            ),
            UrlError::BadChar => f.write_str(
                "the URL contains a space, a control character or a non-ASCII character: \
                 percent-encode it",
            ),
        }
    }
}

impl std::error::Error for UrlError {}

impl HttpUrl {
    /// Parses `scheme://authority[/path][?query][#fragment]`.
    pub fn parse(text: &str) -> Result<HttpUrl, UrlError> {
        if text.len() > MAX_URL {
            return Err(UrlError::TooLong);
        }
        let Some((scheme, rest)) = text.split_once("://") else {
            return Err(UrlError::NotHttp(None));
        };
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            other => {
                let shown = (other.len() <= 16 && other.bytes().all(|b| b.is_ascii_alphanumeric()))
                    .then(|| other.to_string());
                return Err(UrlError::NotHttp(shown));
            }
        };
        if rest.bytes().any(|b| !(0x21..=0x7e).contains(&b)) {
            return Err(UrlError::BadChar);
        }
        let rest = rest.split_once('#').map_or(rest, |(r, _)| r);
        let split = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, target) = rest.split_at(split);
        if authority.contains('@') {
            return Err(UrlError::Userinfo);
        }
        if authority.is_empty() {
            return Err(UrlError::NoHost);
        }
        let (host, port) = if let Some(inner) = authority.strip_prefix('[') {
            let Some((addr, after)) = inner.split_once(']') else {
                return Err(UrlError::BadIpv6);
            };
            let addr: Ipv6Addr = addr.parse().map_err(|_| UrlError::BadIpv6)?;
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':').ok_or(UrlError::BadPort)?),
            };
            (Host::Ipv6(addr), port)
        } else {
            let (h, p) = match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            };
            (parse_host(h)?, p)
        };
        let port = match port {
            None | Some("") => scheme.default_port(),
            Some(p) => {
                if p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(UrlError::BadPort);
                }
                match p.parse::<u16>() {
                    Ok(0) | Err(_) => return Err(UrlError::BadPort),
                    Ok(n) => n,
                }
            }
        };
        let target = if target.starts_with('/') {
            target.to_string()
        } else {
            format!("/{target}")
        };
        Ok(HttpUrl {
            scheme,
            host,
            port,
            target,
        })
    }

    /// Whether this build can reach the URL (`https://` needs the `https` feature); else the
    /// typed refusal.
    pub fn require_plain(&self) -> Result<(), UrlError> {
        match self.scheme {
            Scheme::Http => Ok(()),
            Scheme::Https if cfg!(feature = "https") => Ok(()),
            Scheme::Https => Err(UrlError::HttpsNeedsFeature),
        }
    }

    /// The `Host` header value: the port only when it is not the scheme's default.
    pub fn host_header(&self) -> String {
        if self.port == self.scheme.default_port() {
            self.host.to_string()
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// Scheme, host and port: two URLs with the same origin are the same server.
    pub fn origin(&self) -> String {
        format!("{}://{}", self.scheme.as_str(), self.host_header())
    }

    /// The form a record or a message may show: every query value masked, token-shaped path
    /// segments masked (keys such as `/mcp/<api-key>` are common).
    pub fn redacted(&self) -> String {
        format!("{}{}", self.origin(), redact_target(&self.target))
    }

    /// The addresses to connect to. IP literals need no lookup; a name is resolved on a helper
    /// thread, waiting at most until `deadline`.
    pub fn resolve(&self, deadline: Instant) -> Result<Vec<SocketAddr>, ResolveError> {
        let port = self.port;
        match &self.host {
            Host::Ipv4(a) => Ok(vec![SocketAddr::new(IpAddr::V4(*a), port)]),
            Host::Ipv6(a) => Ok(vec![SocketAddr::new(IpAddr::V6(*a), port)]),
            Host::Name(name) => {
                let (tx, rx) = std::sync::mpsc::sync_channel(1);
                let name = name.clone();
                std::thread::Builder::new()
                    .name("mcpw-resolve".into())
                    .spawn(move || {
                        let found = (name.as_str(), port)
                            .to_socket_addrs()
                            .map(|a| a.collect::<Vec<_>>());
                        let _ = tx.send(found);
                    })
                    .map_err(|e| ResolveError::Failed(e.kind()))?;
                let wait = deadline.saturating_duration_since(Instant::now());
                match rx.recv_timeout(wait) {
                    Ok(Ok(addrs)) if !addrs.is_empty() => Ok(addrs),
                    Ok(Ok(_)) => Err(ResolveError::NoAddress),
                    Ok(Err(e)) => Err(ResolveError::Failed(e.kind())),
                    Err(_) => Err(ResolveError::TimedOut),
                }
            }
        }
    }
}

/// Why a host name gave no address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResolveError {
    NoAddress,
    Failed(std::io::ErrorKind),
    TimedOut,
}

impl fmt::Debug for HttpUrl {
    /// The redacted form: a URL may carry a key in its query or path.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HttpUrl({})", self.redacted())
    }
}

impl fmt::Display for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

fn parse_host(h: &str) -> Result<Host, UrlError> {
    if h.is_empty() {
        return Err(UrlError::NoHost);
    }
    if h.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return h
            .parse::<Ipv4Addr>()
            .map(Host::Ipv4)
            .map_err(|_| UrlError::BadHost);
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    let name = h.strip_suffix('.').unwrap_or(h);
    if name.len() > 253 || !name.split('.').all(label_ok) {
        return Err(UrlError::BadHost);
    }
    Ok(Host::Name(name.to_ascii_lowercase()))
}

/// A request target (`/path?query`) as it may be recorded: every query value masked (a key,
/// a signature, a session), token-shaped path words masked by [`Redactor`].
pub fn redact_target(target: &str) -> String {
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    let mut out = Redactor::default().text(path);
    if let Some(query) = query {
        out.push('?');
        let parts: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, v)) if !v.is_empty() => format!("{k}={MASK}"),
                _ => pair.to_string(),
            })
            .collect();
        out.push_str(&parts.join("&"));
    }
    out
}

/// A `Location` header (absolute or relative) as it may be recorded.
pub fn redact_reference(location: &str) -> String {
    let location: String = location.chars().take(MAX_URL).collect();
    if location.contains("://") {
        match HttpUrl::parse(&location) {
            Ok(u) => u.redacted(),
            // Unparsable: keep only what precedes any query, with passwords masked.
            Err(_) => Redactor::default().text(location.split('?').next().unwrap_or("")),
        }
    } else {
        redact_target(&location)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_host_port_path_and_query_are_taken_apart() {
        let u = HttpUrl::parse("http://127.0.0.1:3001/mcp?x=1").unwrap();
        assert_eq!(u.host, Host::Ipv4(Ipv4Addr::LOCALHOST));
        assert_eq!(u.port, 3001);
        assert_eq!(u.target, "/mcp?x=1");
        assert_eq!(u.host_header(), "127.0.0.1:3001");
    }

    #[test]
    fn ipv6_literal_keeps_its_brackets_in_the_host_header() {
        let u = HttpUrl::parse("http://[::1]:8080/mcp").unwrap();
        assert_eq!(u.host, Host::Ipv6(Ipv6Addr::LOCALHOST));
        assert_eq!(u.host_header(), "[::1]:8080");
        let bare = HttpUrl::parse("http://[::1]").unwrap();
        assert_eq!((bare.port, bare.target.as_str()), (80, "/"));
        assert_eq!(bare.host_header(), "[::1]");
    }

    #[test]
    fn dns_names_are_lower_cased_and_default_port_is_omitted_from_host() {
        let u = HttpUrl::parse("HTTP://Example.COM/a#frag").unwrap();
        assert_eq!(u.host, Host::Name("example.com".into()));
        assert_eq!(u.host_header(), "example.com");
        assert_eq!(u.target, "/a");
        let q = HttpUrl::parse("http://example.com?x=1").unwrap();
        assert_eq!(q.target, "/?x=1");
    }

    #[test]
    fn userinfo_is_refused_and_the_message_points_to_header_env() {
        let e = HttpUrl::parse("http://user:secret@127.0.0.1/mcp").unwrap_err();
        assert_eq!(e, UrlError::Userinfo);
        let msg = e.to_string();
        assert!(msg.contains("--header-env"), "{msg}");
        assert!(!msg.contains("secret"), "{msg}");
    }

    #[cfg(not(feature = "https"))]
    #[test]
    fn https_parses_but_needs_the_https_feature() {
        let u = HttpUrl::parse("https://example.com/mcp").unwrap();
        assert_eq!(u.port, 443);
        let e = u.require_plain().unwrap_err();
        assert_eq!(e, UrlError::HttpsNeedsFeature);
        assert!(e.to_string().contains("--features https"));
        assert!(HttpUrl::parse("http://a/").unwrap().require_plain().is_ok());
    }

    #[test]
    fn malformed_urls_get_typed_errors() {
        let cases = [
            ("ftp://a/", UrlError::NotHttp(Some("ftp".into()))),
            ("127.0.0.1:3001/mcp", UrlError::NotHttp(None)),
            ("http:///mcp", UrlError::NoHost),
            ("http://a:0/", UrlError::BadPort),
            ("http://a:65536/", UrlError::BadPort),
            ("http://a:x/", UrlError::BadPort),
            ("http://[::1/", UrlError::BadIpv6),
            ("http://[fe80::1%25eth0]/", UrlError::BadIpv6),
            ("http://[::1]x/", UrlError::BadPort),
            ("http://a b/", UrlError::BadChar),
            ("http://a/\r\nX: y", UrlError::BadChar),
            ("http://a/é", UrlError::BadChar),
            ("http://999.1.1.1/", UrlError::BadHost),
            ("http://a..b/", UrlError::BadHost),
            ("http://a%41/", UrlError::BadHost),
        ];
        for (text, want) in cases {
            assert_eq!(HttpUrl::parse(text), Err(want), "{text:?}");
        }
        assert_eq!(
            HttpUrl::parse(&format!("http://a/{}", "x".repeat(MAX_URL))),
            Err(UrlError::TooLong)
        );
    }

    #[test]
    fn redacted_form_masks_query_values_and_token_shaped_path_segments() {
        let u = HttpUrl::parse(
            "http://127.0.0.1:9/mcp/ghp_abcdefghijklmnopqrstuvwxyz0123456789?api_key=s3cr3t&debug=&flag",
        )
        .unwrap();
        let shown = u.redacted();
        assert_eq!(
            shown,
            "http://127.0.0.1:9/mcp/[REDACTED]?api_key=[REDACTED]&debug=&flag"
        );
        assert_eq!(format!("{u:?}"), format!("HttpUrl({shown})"));
        assert_eq!(u.to_string(), shown);
    }

    #[test]
    fn redirect_locations_are_redacted_whether_absolute_or_relative() {
        assert_eq!(
            redact_reference("http://127.0.0.1:1/mcp?token=abc"),
            "http://127.0.0.1:1/mcp?token=[REDACTED]"
        );
        assert_eq!(redact_reference("/mcp/?sid=42"), "/mcp/?sid=[REDACTED]");
        assert_eq!(
            redact_reference("http://u:pw@host/x?y=1"),
            "http://u:[REDACTED]@host/x"
        );
    }

    #[test]
    fn ip_literals_resolve_without_a_lookup() {
        let u = HttpUrl::parse("http://[::1]:5/").unwrap();
        let addrs = u.resolve(Instant::now()).unwrap();
        assert_eq!(addrs, vec!["[::1]:5".parse::<SocketAddr>().unwrap()]);
    }

    #[test]
    fn localhost_name_resolves_within_the_deadline() {
        let u = HttpUrl::parse("http://localhost:7/").unwrap();
        let addrs = u
            .resolve(Instant::now() + std::time::Duration::from_secs(5))
            .unwrap();
        assert!(addrs.iter().all(|a| a.ip().is_loopback() && a.port() == 7));
    }
}
