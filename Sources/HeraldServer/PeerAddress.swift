import CLibUV
#if canImport(Glibc)
import Glibc
#endif

/// Where a client connection comes from: `127.0.0.1:54321`, `[2001:db8::7]:40000`, or `unix`.
///
/// Every connection log line carries it (`peer=…`), so an operator can tell which host is
/// failing auth or filling queues, and the broker gets the host part (`Session.peer`) to
/// count connections per address. Taken once, right after accept, while the peer is surely
/// still known to the kernel.
struct PeerAddress: Equatable, Sendable, CustomStringConvertible {
    /// The address without the port: `127.0.0.1`, `2001:db8::7`, `unix`, or `unknown`.
    let host: String
    /// The peer's TCP port; nil for a Unix socket or an address the kernel no longer knows.
    let port: Int?

    /// A connection over the Unix socket: local, with no address of its own.
    static let unix = PeerAddress(host: "unix", port: nil)
    /// A TCP peer whose address could not be read (it reset before we asked).
    static let unknown = PeerAddress(host: "unknown", port: nil)

    /// `host:port`, with brackets around an IPv6 host; just the host without a port.
    var description: String {
        guard let port else { return host }
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + String(port)
    }

    /// The host part as bytes, the form the broker keeps (`Session.peer`).
    var hostBytes: [UInt8] { Array(host.utf8) }

    /// The remote address of a connected TCP handle.
    /// - Parameter handle: an accepted (or adopted) `uv_tcp_t`.
    /// - Returns: the address, `unknown` when `getpeername` fails. An IPv4 peer of a dual-stack
    ///   listener (`::ffff:10.0.0.1`) is given as plain IPv4, so one host counts as one address.
    static func of(tcp handle: UnsafeMutablePointer<uv_tcp_t>) -> PeerAddress {
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getpeername(handle, $0, &length) }
        }
        guard status == 0 else { return .unknown }
        var name = [CChar](repeating: 0, count: 64)
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                    guard uv_ip4_name(address, &name, name.count) == 0 else { return .unknown }
                    return PeerAddress(host: text(of: name), port: Int(UInt16(bigEndian: address.pointee.sin_port)))
                }
            }
        case AF_INET6:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
                    guard uv_ip6_name(address, &name, name.count) == 0 else { return .unknown }
                    var host = text(of: name)
                    let mapped = "::ffff:"
                    if host.hasPrefix(mapped), host.contains(".") { host.removeFirst(mapped.count) }
                    return PeerAddress(host: host, port: Int(UInt16(bigEndian: address.pointee.sin6_port)))
                }
            }
        default:
            return .unknown
        }
    }

    /// The text before the first NUL of a C string buffer.
    private static func text(of buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
