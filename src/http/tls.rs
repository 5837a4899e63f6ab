//! `https://` for the HTTP client: what a connection needs to speak TLS (the server name and
//! the trusted roots, [`Tls`]), the errors of that layer ([`TlsError`]), and, with the cargo
//! feature `https`, the handshake itself (rustls, ring provider) and the SHA-256 of the
//! server's leaf certificate (DER), recorded as the counterpart of a program's digest.
//!
//! Roots: the PEM certificates of `--cacert FILE` when given (only those), else Mozilla's
//! (webpki-roots). Without the feature an `https://` URL is refused earlier, by
//! [`super::url::HttpUrl::require_plain`], with the command that builds https in.

use std::fmt;
use std::path::PathBuf;

/// Bytes read of a `--cacert` file at most.
pub const MAX_CACERT: u64 = 1 << 20;

/// Why TLS could not be set up or the handshake failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsError {
    /// The `--cacert` file could not be read (or is over [`MAX_CACERT`]).
    CacertUnreadable(String),
    /// The `--cacert` file holds no usable PEM certificate.
    CacertEmpty,
    /// The server's certificate is not trusted, expired, or names another host.
    Certificate(String),
    /// The handshake failed otherwise (protocol, alert, not TLS at all).
    Handshake(String),
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsError::CacertUnreadable(why) => {
                write!(f, "cannot read the --cacert file ({why}): give a readable PEM file")
            }
            TlsError::CacertEmpty => f.write_str(
                "the --cacert file holds no PEM certificate (-----BEGIN CERTIFICATE-----): give the server's CA certificate",
            ),
            TlsError::Certificate(why) => write!(
                f,
                "the server's TLS certificate was refused ({}): give its CA with --cacert FILE, or check the URL's host",
                crate::inert::inert(why)
            ),
            TlsError::Handshake(why) => write!(
                f,
                "the TLS handshake failed ({}): check that the server speaks https on this port",
                crate::inert::inert(why)
            ),
        }
    }
}

/// Which side of TLS failed, in one word, for the wire and the reason text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsFailure {
    /// The certificate was refused, or the `--cacert` file was unusable.
    Certificate,
    /// The handshake failed otherwise.
    Handshake,
}

impl TlsFailure {
    /// What the user should do, as a sentence ending.
    pub fn sentence(self) -> &'static str {
        match self {
            TlsFailure::Certificate => {
                "the server's TLS certificate was not trusted: give its CA with --cacert FILE (PEM), or check the URL's host"
            }
            TlsFailure::Handshake => {
                "the TLS handshake failed: check that the server speaks https on this port"
            }
        }
    }
}

impl TlsError {
    pub fn failure(&self) -> TlsFailure {
        match self {
            TlsError::Handshake(_) => TlsFailure::Handshake,
            _ => TlsFailure::Certificate,
        }
    }
}

/// What the user chose for TLS: extra roots from a PEM file, or none (the built-in roots).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    pub cacert: Option<PathBuf>,
}

/// Checks a `--cacert` file before a run: readable, bounded, and holding at least one PEM
/// certificate (so a wrong file is a usage error, not a failed probe).
#[cfg(feature = "https")]
pub fn check_cacert(path: &std::path::Path) -> Result<(), TlsError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let bytes = read_cacert(path)?;
    if CertificateDer::pem_slice_iter(&bytes).flatten().next().is_none() {
        return Err(TlsError::CacertEmpty);
    }
    Ok(())
}

/// Reads a `--cacert` file, bounded.
#[cfg_attr(not(feature = "https"), allow(dead_code))]
fn read_cacert(path: &std::path::Path) -> Result<Vec<u8>, TlsError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| TlsError::CacertUnreadable(e.kind().to_string()))?;
    let mut bytes = Vec::new();
    file.take(MAX_CACERT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| TlsError::CacertUnreadable(e.kind().to_string()))?;
    if bytes.len() as u64 > MAX_CACERT {
        return Err(TlsError::CacertUnreadable(format!("over {MAX_CACERT} bytes")));
    }
    Ok(bytes)
}

#[cfg(feature = "https")]
pub use enabled::{Tls, TlsStream};

#[cfg(feature = "https")]
mod enabled {
    use super::{TlsError, TlsOptions, read_cacert};
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName};
    use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
    use sha2::{Digest, Sha256};
    use std::io::{self, Read, Write};
    use std::net::TcpStream;
    use std::sync::Arc;
    use std::time::Instant;

    /// A TLS session over the connection's socket.
    pub type TlsStream = StreamOwned<ClientConnection, DeadlineSock>;

    /// The socket under TLS, with one deadline for every read and write rustls makes: one
    /// TLS read may need several socket reads (a record arriving in pieces), and each waits
    /// only for what is left, so a server trickling bytes cannot stretch the wait.
    #[derive(Debug)]
    pub struct DeadlineSock {
        pub sock: TcpStream,
        pub deadline: Option<Instant>,
    }

    impl DeadlineSock {
        fn arm(&self, read: bool) -> io::Result<()> {
            let Some(deadline) = self.deadline else {
                return Ok(());
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::ErrorKind::TimedOut.into());
            }
            if read {
                self.sock.set_read_timeout(Some(left))
            } else {
                self.sock.set_write_timeout(Some(left))
            }
        }
    }

    impl Read for DeadlineSock {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.arm(true)?;
            self.sock.read(buf)
        }
    }

    impl Write for DeadlineSock {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.arm(false)?;
            self.sock.write(buf)
        }

        fn flush(&mut self) -> io::Result<()> {
            self.sock.flush()
        }
    }

    /// The client side of TLS for one server: its name and the configuration (roots).
    #[derive(Clone)]
    pub struct Tls {
        name: ServerName<'static>,
        config: Arc<ClientConfig>,
    }

    impl std::fmt::Debug for Tls {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Tls")
                .field("name", &self.name)
                .finish_non_exhaustive()
        }
    }

    impl Tls {
        /// The TLS setup for `host` (a DNS name or an IP literal) with `options`' roots.
        pub fn new(host: &super::super::url::Host, options: &TlsOptions) -> Result<Tls, TlsError> {
            use super::super::url::Host;
            let name = match host {
                Host::Ipv4(ip) => ServerName::IpAddress(std::net::IpAddr::V4(*ip).into()),
                Host::Ipv6(ip) => ServerName::IpAddress(std::net::IpAddr::V6(*ip).into()),
                Host::Name(n) => ServerName::try_from(n.clone())
                    .map_err(|e| TlsError::Handshake(format!("server name: {e}")))?,
            };
            let mut roots = RootCertStore::empty();
            match &options.cacert {
                Some(path) => {
                    let bytes = read_cacert(path)?;
                    for cert in CertificateDer::pem_slice_iter(&bytes).flatten() {
                        let _ = roots.add(cert);
                    }
                    if roots.is_empty() {
                        return Err(TlsError::CacertEmpty);
                    }
                }
                None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
            }
            let config =
                ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                    .with_safe_default_protocol_versions()
                    .map_err(|e| TlsError::Handshake(e.to_string()))?
                    .with_root_certificates(roots)
                    .with_no_client_auth();
            Ok(Tls {
                name,
                config: Arc::new(config),
            })
        }

        /// Starts a session over `sock`; every socket read and write waits at most until
        /// `deadline` (the handshake runs in [`handshake`]).
        pub fn start(&self, sock: TcpStream, deadline: Instant) -> Result<TlsStream, TlsError> {
            let conn = ClientConnection::new(Arc::clone(&self.config), self.name.clone())
                .map_err(|e| TlsError::Handshake(e.to_string()))?;
            Ok(StreamOwned::new(
                conn,
                DeadlineSock {
                    sock,
                    deadline: Some(deadline),
                },
            ))
        }
    }

    /// Completes the handshake (before the stream's deadline) and returns
    /// the SHA-256 of the server's leaf certificate, DER.
    pub fn handshake(stream: &mut TlsStream) -> Result<Option<[u8; 32]>, std::io::Error> {
        while stream.conn.is_handshaking() {
            stream.conn.complete_io(&mut stream.sock)?;
        }
        Ok(stream
            .conn
            .peer_certificates()
            .and_then(|c| c.first())
            .map(|der| Sha256::digest(der.as_ref()).into()))
    }

    /// A TLS failure out of an I/O error from rustls, if it is one.
    pub fn classify(e: &std::io::Error) -> Option<TlsError> {
        let inner = e.get_ref()?.downcast_ref::<rustls::Error>()?;
        Some(match inner {
            rustls::Error::InvalidCertificate(c) => TlsError::Certificate(format!("{c:?}")),
            other => TlsError::Handshake(other.to_string()),
        })
    }
}

#[cfg(feature = "https")]
pub use enabled::{classify, handshake};

/// Without the `https` feature there is no TLS: this stands in so the client's types stay
/// one shape; it cannot be made (an `https://` URL is refused before a connection).
#[cfg(not(feature = "https"))]
#[derive(Debug, Clone)]
pub enum Tls {}
