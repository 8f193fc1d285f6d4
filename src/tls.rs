//! TLS for `wss://` workers: rustls with a built-in trust store plus the CAs a Node product
//! already names in `NODE_EXTRA_CA_CERTS`.
//!
//! The built-in store is the operating system's on Linux and Windows (rustls-native-certs) and
//! the Mozilla roots compiled in on macOS (webpki-roots), which is what Node itself trusts by
//! default; the keychain would need Security.framework, which a binary cross-linked without the
//! macOS SDK cannot link (docs/platforms.md, "macOS").

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, RootCertStore};
use std::fmt;
use std::sync::{Arc, OnceLock};

/// Why there is no TLS configuration: each case names `NODE_EXTRA_CA_CERTS`'s path, shown as
/// the product set it, and the underlying reason. Cloneable, as the one outcome is kept for
/// every later connection.
#[derive(Debug, Clone)]
pub enum TlsSetupError {
    ExtraCasUnreadable { path: String, why: String },
    ExtraCasNotPem { path: String, why: String },
    ExtraCaRefused { path: String, why: String },
    Protocols(String),
}

impl fmt::Display for TlsSetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsSetupError::ExtraCasUnreadable { path, why } => {
                write!(f, "cannot read NODE_EXTRA_CA_CERTS ({path}): {why}")
            }
            TlsSetupError::ExtraCasNotPem { path, why } => {
                write!(f, "NODE_EXTRA_CA_CERTS ({path}) is not PEM: {why}")
            }
            TlsSetupError::ExtraCaRefused { path, why } => {
                write!(f, "NODE_EXTRA_CA_CERTS ({path}): {why}")
            }
            TlsSetupError::Protocols(why) => write!(f, "TLS set-up failed: {why}"),
        }
    }
}

impl std::error::Error for TlsSetupError {}

/// The TLS client configuration: the built-in trust store ([`builtin_roots`]) plus the CAs in
/// `NODE_EXTRA_CA_CERTS` (the Node convention a product already uses), ring as the crypto
/// provider (named explicitly: rustls panics when it has to guess), hostnames verified.
pub fn tls_config() -> Result<Arc<ClientConfig>, TlsSetupError> {
    static CONFIG: OnceLock<Result<Arc<ClientConfig>, TlsSetupError>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = builtin_roots();
            if let Some(path) = std::env::var_os("NODE_EXTRA_CA_CERTS").filter(|p| !p.is_empty()) {
                let shown = path.to_string_lossy().into_owned();
                let pem = std::fs::read(&path).map_err(|e| TlsSetupError::ExtraCasUnreadable {
                    path: shown.clone(),
                    why: e.to_string(),
                })?;
                for cert in CertificateDer::pem_slice_iter(&pem) {
                    let cert = cert.map_err(|e| TlsSetupError::ExtraCasNotPem {
                        path: shown.clone(),
                        why: format!("{e:?}"),
                    })?;
                    roots.add(cert).map_err(|e| TlsSetupError::ExtraCaRefused {
                        path: shown.clone(),
                        why: e.to_string(),
                    })?;
                }
            }
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| TlsSetupError::Protocols(e.to_string()))?
                .with_root_certificates(roots)
                .with_no_client_auth();
            Ok(Arc::new(config))
        })
        .clone()
}

/// macOS: the Mozilla root program's CAs, compiled in (webpki-roots), as Node's own bundled
/// store; not the keychain.
#[cfg(target_os = "macos")]
fn builtin_roots() -> RootCertStore {
    RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    }
}

/// Linux and Windows: the operating system's trust store (rustls-native-certs).
#[cfg(not(target_os = "macos"))]
fn builtin_roots() -> RootCertStore {
    let mut roots = RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        // A platform certificate rustls cannot use is one fewer root, not a failure.
        let _ = roots.add(cert);
    }
    roots
}
