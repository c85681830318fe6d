/// How a TLS client decides whether to trust the server's certificate.
///
/// The client's own type (not `HeraldTLS`'s) because `Herald` links no OpenSSL on Apple
/// platforms, where Network.framework checks certificates.
public enum TLSTrust: Sendable, Equatable {
    /// Trust only certificates issued by the CAs in this PEM file (a self-signed server
    /// certificate is its own CA); the name or IP address connected to must match the certificate.
    case certificateAuthorities(file: String)
    /// Trust the system's CA store (Debian: /etc/ssl/certs; Apple platforms: the system trust
    /// settings); the name must match.
    case system
    /// Encrypt but verify nothing: anyone in the middle can read the traffic. For development only.
    case insecure
}
