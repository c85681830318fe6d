// Which transport this platform compiles (docs/client.md, "Platforms"). Nothing else in the
// module names a platform: only the files of the chosen transport are inside `#if`.
#if canImport(Network)
/// Apple platforms: Network.framework, TLS through `NWProtocolTLS`, no OpenSSL.
typealias PlatformTransport = NetworkTransport
/// Apple platforms: a condition variable that Network.framework's callbacks also signal.
typealias PlatformWake = ConditionWake
#else
/// Linux: POSIX sockets and `poll`, TLS through OpenSSL (`HeraldTLS`).
typealias PlatformTransport = SocketTransport
/// Linux: a self-pipe in the same `poll` as the socket.
typealias PlatformWake = WakePipe
#endif
