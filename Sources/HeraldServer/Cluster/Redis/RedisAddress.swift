/// A Redis or Sentinel server's TCP address.
public struct RedisAddress: Equatable, Sendable, CustomStringConvertible {
    /// The host (a name or an IP address; IPv6 without brackets).
    public var host: String
    /// The TCP port.
    public var port: Int

    /// Creates an address.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Reads `host:port` (IPv6 in brackets: `[::1]:26379`); the port is required.
    /// - Throws: `ClusterURLError` naming the text.
    public init(parsing text: String) throws(ClusterURLError) {
        guard let colon = text.lastIndex(of: ":") else { throw ClusterURLError("expected host:port, found \"\(text)\"") }
        var host = Substring(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        guard !host.isEmpty, !host.contains("/"), !host.contains(" ") else {
            throw ClusterURLError("expected host:port, found \"\(text)\"")
        }
        guard let port = Int(text[text.index(after: colon)...]), (1...65535).contains(port) else {
            throw ClusterURLError("port must be 1…65535 in \"\(text)\"")
        }
        self.init(host: String(host), port: port)
    }

    /// `host:port`, IPv6 hosts in brackets.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
