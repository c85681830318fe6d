/// TLS settings for a client connection (`ClientConfiguration.tls`).
///
/// The daemon offers TLS on its own port (`tls_port`); connect there with these options. The
/// certificate is checked against the CAs chosen by `trust`, and the host name or IP address
/// of a TCP endpoint must match the certificate, unless `trust` is `.insecure`.
public struct TLSOptions: Sendable, Equatable {
    /// Which certificates the client accepts.
    public var trust: TLSTrust
    /// The name to send (SNI) and to check the certificate against; nil uses the endpoint's host.
    public var serverName: String?

    /// Creates TLS options.
    /// - Parameters:
    ///   - trust: `.certificateAuthorities(file:)` (a PEM file; for a self-signed daemon, its
    ///     certificate), `.system` (the system CA store), or `.insecure` (no check: development only).
    ///   - serverName: overrides the name checked and sent; nil for the endpoint's host.
    public init(trust: TLSTrust, serverName: String? = nil) {
        self.trust = trust
        self.serverName = serverName
    }

    /// Trust the CAs in a PEM file.
    /// - Parameter file: the CA (or self-signed server) certificate file.
    /// - Returns: options verifying against that file.
    public static func certificateAuthorities(file: String) -> TLSOptions {
        TLSOptions(trust: .certificateAuthorities(file: file))
    }

    /// Encrypt without checking the certificate: anyone in the middle can read along.
    public static let insecure = TLSOptions(trust: .insecure)
}
